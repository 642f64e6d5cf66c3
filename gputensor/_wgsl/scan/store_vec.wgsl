// store_vec's body: v stored as vector k of dst (of the accumulation type).
    dst[k] = v;
