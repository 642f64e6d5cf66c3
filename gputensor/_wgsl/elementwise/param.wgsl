// A parameter of element: the raw value of array operand K (of TYPE) in the vector modes.
r{{K}}: {{TYPE}}
