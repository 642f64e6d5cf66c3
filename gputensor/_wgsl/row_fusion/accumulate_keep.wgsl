// Keeps CALL (statistic K's function at the element) at INDEX and accumulates it (VALUE: as the
// accumulator type) by its KIND.
v{{K}}[{{INDEX}}] = {{CALL}};
acc{{K}} = combine(acc{{K}}, {{VALUE}}, {{KIND}}u);
