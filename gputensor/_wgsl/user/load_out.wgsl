// The initial value of output J, for an output the body reads.
        let _o{{J}} = _out{{J}}[o.o{{SLOT}}];
