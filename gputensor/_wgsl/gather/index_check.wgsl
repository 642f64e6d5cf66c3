// Index array K's range check in index_offset: sets bit BIT of bad_bits for a value outside the axis.
    if (!idx{{K}}_in_range(at.{{C}}, bitcast<i32>(params.idx_n.{{C}}))) { bad_bits |= {{BIT}}u; }
