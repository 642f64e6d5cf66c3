// Element's lane of the word (BITS: its bits, SHIFT: its lane's).
w = w | ({{BITS}} << {{SHIFT}}u);
