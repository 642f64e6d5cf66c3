// Records the failed index checks of a point in the call's flag word.
atomicOr(&checks[params.check_slot], bad_bits);
