// The CUDA C twin of examples/histogram.rk: hist[data[i] % bins] += 1 for
// i < n. Each block counts into a private histogram in shared memory with
// shared atomics, then adds its nonzero bins to the global one with global
// atomics. bins <= 256.
extern "C" __global__ void histogram(unsigned n, unsigned bins, const unsigned* data, unsigned* hist) {
    __shared__ unsigned local_hist[256];
    unsigned t = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x + t;
    for (unsigned b = t; b < bins; b += blockDim.x) {
        local_hist[b] = 0;
    }
    __syncthreads();
    if (i < n) {
        atomicAdd(&local_hist[data[i] % bins], 1u);
    }
    __syncthreads();
    for (unsigned b = t; b < bins; b += blockDim.x) {
        unsigned count = local_hist[b];
        if (count != 0) {
            atomicAdd(&hist[b], count);
        }
    }
}
