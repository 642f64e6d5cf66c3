// The write pass of a scatter with duplicates: only the winner of its element writes.
if (atomicLoad(&win[params.w_first + bi - params.lo]) != point) {
            return;
        }
