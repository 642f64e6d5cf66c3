// store_partial's body where the partial values are bound as the destination.
dst[i] = to_sh(x);
