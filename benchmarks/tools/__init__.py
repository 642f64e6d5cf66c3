"""Diagnostic and tuning scripts (``python -m benchmarks.tools.NAME``); they print, they make no table.

* ``host_profile``: per-call cost of the raw wgpu calls of one operation, cProfile of typical loops;
* ``diag_kernels``, ``diag_reduce``: GPU time per kernel of reductions (``--sweep``: the
  ``GPUTENSOR_REDUCE_WORKGROUPS`` / ``GPUTENSOR_REDUCE_VEC4_*`` knobs);
* ``tune_gemm``: matmul tile configurations; ``tune_splitk``: the split-K policy and the
  autotuner's choice; ``tune_attention``: the attention kernel variants
  (``GPUTENSOR_ATTENTION_KERNEL``).

All time with ``benchmarks._timing``. ``--small`` (where offered) shrinks sizes for a software
adapter.
"""
