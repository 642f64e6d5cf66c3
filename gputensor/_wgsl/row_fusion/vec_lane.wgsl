// Element E of the unit's vector.
wv[{{E}}u] = {{VALUE}};
