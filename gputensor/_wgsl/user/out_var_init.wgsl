// Output NAME in the body, starting from its value in memory.
    var {{NAME}}: {{TYPE}} = _init_{{J}};
