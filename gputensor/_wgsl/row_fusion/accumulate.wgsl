// Accumulates VALUE (statistic K's function at the element, as the accumulator type) by its KIND.
acc{{K}} = combine(acc{{K}}, {{VALUE}}, {{KIND}}u);
