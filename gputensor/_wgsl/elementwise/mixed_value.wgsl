// The mixed vector mode: the value of element E of the group, converted to the output's type.
    let y{{E}} = {{VALUE}};
