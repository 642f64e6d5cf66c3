// Stores output NAME of the body's result as element o.o{{SLOT}} of output J.
        _out{{J}}[o.o{{SLOT}}] = r.{{NAME}};
