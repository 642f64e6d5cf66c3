// Statistic K's value (VALUE: converted and rounded to its dtype).
    let s{{K}} = {{VALUE}};
