// A parameter of the kernel's body function.
{{NAME}}: {{TYPE}}
