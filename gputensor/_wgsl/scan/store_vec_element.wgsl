// store_dst's body for a dst bound as vectors: element i of its vec4 words.
    dst[(i) >> 2u][(i) & 3u] = {{VALUE}};
