// load_partial's body where the partial values are bound as the source.
return from_sh(src[i]);
