// A type placeholder of the kernel's parameters, as the compute type it stands for.
alias {{LETTER}} = {{TYPE}};
