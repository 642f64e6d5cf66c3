// Caches slot A's element E of the unit.
c{{A}}[c * {{L}}u + {{E}}u] = ld{{A}}(o{{A}} + j * step{{A}});
