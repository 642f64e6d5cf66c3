// FMA throughput probe for CuPy (benchmarks/tools/fma_peak.py): the CUDA twin of fma_peak.wgsl
// (32 independent fma chains per thread, `iters` rounds, the sum stored).
extern "C" __global__ void fma_peak(const int iters, const FMA_T mul, const FMA_T add, FMA_T* out) {
    const unsigned idx = blockIdx.x * blockDim.x + threadIdx.x;
    FMA_T c[32];
    for (int j = 0; j < 32; ++j) c[j] = (FMA_T)idx * (FMA_T)1e-9 + (FMA_T)j;
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int j = 0; j < 32; ++j) c[j] = fma(c[j], mul, add);
    }
    FMA_T t = 0;
#pragma unroll
    for (int j = 0; j < 32; ++j) t += c[j];
    out[idx] = t;
}
