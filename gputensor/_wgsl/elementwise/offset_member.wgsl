// A member of Offsets: the element index of operand slot SLOT.
o{{SLOT}}: u32
