// store_dst's body: a plain store.
dst[i] = x;
