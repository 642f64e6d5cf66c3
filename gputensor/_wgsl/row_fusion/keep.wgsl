// The registers keeping the values of statistic K's function (N of TYPE) for the output function.
    var v{{K}}: array<{{TYPE}}, {{N}}>;
