// Argument K of the body: VALUE, the input's load (or parameter words) as its compute type.
        let _a{{K}} = {{VALUE}};
