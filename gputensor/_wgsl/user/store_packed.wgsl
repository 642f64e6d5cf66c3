// Stores output J (a packed dtype: LANES lanes of BITS bits a word, MASK their mask; LANE the bits of
// the body's value) with atomicAnd/atomicOr.
        {
            let _p = o.o{{SLOT}};
            let _sh = (_p % {{LANES}}u) * {{BITS}}u;
            atomicAnd(&_out{{J}}[_p / {{LANES}}u], ~({{MASK}}u << _sh));
            atomicOr(&_out{{J}}[_p / {{LANES}}u], {{LANE}} << _sh);
        }
