// The claim pass of a scatter with duplicates: every point claims its element (the last one wins).
atomicMax(&win[params.w_first + bi - params.lo], point);
        return;
