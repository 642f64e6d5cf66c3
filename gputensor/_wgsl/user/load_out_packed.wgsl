// The initial value of the packed output J (its word read atomically, LOAD: its lane), for an output
// the body reads.
        var _w{{J}} = array<u32, 1>(atomicLoad(&_out{{J}}[o.o{{SLOT}} / {{LANES}}u]));
        let _o{{J}} = {{LOAD}};
