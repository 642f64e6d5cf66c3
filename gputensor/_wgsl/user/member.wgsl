// Output NAME of the body's result struct.
    {{NAME}}: {{TYPE}},
