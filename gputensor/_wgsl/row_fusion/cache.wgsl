// The registers caching slot A's elements of the lane (N of TYPE).
    var c{{A}}: array<{{TYPE}}, {{N}}>;
