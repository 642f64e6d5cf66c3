// ... and caches its element E.
c{{A}}[c * 4u + {{E}}u] = q{{A}}[{{E}}u];
