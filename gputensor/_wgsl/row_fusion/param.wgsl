// A parameter of a row function.
x{{I}}: {{TYPE}}
