// store_dst's body: a plain store of VALUE (v converted to dst's type).
    dst[i] = {{VALUE}};
