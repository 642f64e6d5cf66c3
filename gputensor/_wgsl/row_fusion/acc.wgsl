// Statistic K's accumulator (IDENTITY: the identity of its kind).
    var acc{{K}} = {{IDENTITY}};
