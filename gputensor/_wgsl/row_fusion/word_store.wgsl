// Stores the unit's word into the packed slot A (L lanes a word).
A{{A}}[o{{A}} / {{L}}u + u] = w;
