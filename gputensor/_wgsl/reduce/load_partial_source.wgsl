// load_partial's body of a first pass: the source element as an accumulator.
return to_acc(load_src(i));
