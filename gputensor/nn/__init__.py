"""gputensor.nn: neural-network functions on gputensor arrays, with torch.nn.functional's
signatures and the Array API's conventions (new arrays, ``TypeError`` for dtypes, ``ValueError``
for shapes).

* :func:`conv2d` -- NCHW 2-D convolution (stride, padding incl. "same"/"valid", dilation, groups);
* :func:`int_mm` -- int8 x int8 matrix products with int32 results (``torch._int_mm``), on
  subgroup matrices (tensor cores) where the device has them;
* :func:`scaled_dot_product_attention` -- attention over any leading batch dims, with boolean or
  additive masks and torch's ``is_causal``;
* :func:`softmax`, :func:`log_softmax`, :func:`logsumexp`, :func:`layer_norm`, :func:`rms_norm`
  -- fused row kernels.
"""

from __future__ import annotations

from ._attention import scaled_dot_product_attention
from ._conv import conv2d
from ._int_mm import int_mm
from ._rows import layer_norm, log_softmax, logsumexp, rms_norm, softmax

__all__ = ["conv2d", "int_mm", "layer_norm", "log_softmax", "logsumexp", "rms_norm", "scaled_dot_product_attention",
           "softmax"]
