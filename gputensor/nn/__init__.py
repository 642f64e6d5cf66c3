from ._rows import layer_norm, log_softmax, logsumexp, rms_norm, softmax
