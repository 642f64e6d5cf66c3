// element's operand K: VALUE, its load (or parameter words) converted to its compute type.
    let x{{K}} = {{VALUE}};
