// The CUDA C twin of examples/reduce.rk: out[b] = the sum of block b's
// elements (those past n count as zero), a tree reduction in shared
// memory. Blocks of 256 threads (a power of two, at most 256).
extern "C" __global__ void reduce(unsigned n, const float* x, float* out) {
    __shared__ float buf[256];
    unsigned t = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x + t;
    buf[t] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (unsigned stride = blockDim.x >> 1; stride != 0; stride >>= 1) {
        if (t < stride) {
            buf[t] = buf[t] + buf[t + stride];
        }
        __syncthreads();
    }
    if (t == 0) {
        out[blockIdx.x] = buf[0];
    }
}
