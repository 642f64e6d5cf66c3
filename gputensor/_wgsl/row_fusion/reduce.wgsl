// Combines the row's lanes' accumulators of statistic K (row_reduce).
    let red{{K}} = row_reduce(acc{{K}}, lid, slot, t, {{KIND}}u);
