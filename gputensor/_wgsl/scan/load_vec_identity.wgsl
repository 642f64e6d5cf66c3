// load_vec's body outside the vector mode (not called).
    return splat4(identity());
