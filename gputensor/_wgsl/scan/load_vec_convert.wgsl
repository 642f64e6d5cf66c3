// load_vec's body: vector k of src, its lanes X, Y, Z, W converted to the accumulation type ACC.
    let w = src[k];
    return vec4<{{ACC}}>({{X}}, {{Y}}, {{Z}}, {{W}});
