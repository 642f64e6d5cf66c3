// Stores the unit's vector into slot A.
stv{{A}}(o{{A}} + u * 4u, wv);
