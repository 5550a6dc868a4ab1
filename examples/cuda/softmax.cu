// The CUDA C twin of examples/softmax.rk: row-wise softmax, numerically
// stable, one block per row of `cols` columns (cols <= blockDim.x <= 256,
// blockDim.x a power of two): the row's maximum and the sum of
// exp(x - max) by tree reductions in shared memory, with CUDA's expf.
extern "C" __global__ void softmax(unsigned cols, const float* x, float* y) {
    __shared__ float buf[256];
    unsigned t = threadIdx.x;
    unsigned i = blockIdx.x * cols + t;
    bool inside = t < cols;
    buf[t] = inside ? x[i] : __int_as_float(0xff800000);  // -inf
    __syncthreads();
    for (unsigned stride = blockDim.x >> 1; stride != 0; stride >>= 1) {
        if (t < stride) {
            buf[t] = fmaxf(buf[t], buf[t + stride]);
        }
        __syncthreads();
    }
    float m = buf[0];
    __syncthreads();
    float e = inside ? expf(x[i] - m) : 0.0f;
    buf[t] = e;
    __syncthreads();
    for (unsigned stride = blockDim.x >> 1; stride != 0; stride >>= 1) {
        if (t < stride) {
            buf[t] = buf[t] + buf[t + stride];
        }
        __syncthreads();
    }
    if (inside) {
        y[i] = e / buf[0];
    }
}
