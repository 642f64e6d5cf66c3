// offsets' result (VALUES: the operands' indices in slot order).
    return Offsets({{VALUES}});
