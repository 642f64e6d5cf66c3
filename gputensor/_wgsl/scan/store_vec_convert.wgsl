// store_vec's body: v's lanes X, Y, Z, W converted to dst's type DST, stored as vector k.
    dst[k] = vec4<{{DST}}>({{X}}, {{Y}}, {{Z}}, {{W}});
