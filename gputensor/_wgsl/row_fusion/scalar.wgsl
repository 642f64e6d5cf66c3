// Scalar parameter Q (VALUE: its load from the parameter words).
    let p{{Q}} = {{VALUE}};
