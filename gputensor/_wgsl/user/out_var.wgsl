// Output NAME in the body, starting from zero.
    var {{NAME}}: {{TYPE}};
