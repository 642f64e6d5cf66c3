// load_vec's body: vector k of src, already of the accumulation type.
    return src[k];
