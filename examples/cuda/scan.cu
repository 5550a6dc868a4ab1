// The CUDA C twin of examples/scan.rk: the inclusive prefix sum within
// each block (Hillis-Steele), out[i] = x[b * blockDim.x] + ... + x[i];
// elements past n count as zero and are not written. blockDim.x <= 1024.
extern "C" __global__ void scan(unsigned n, const unsigned* x, unsigned* out) {
    __shared__ unsigned buf[1024];
    unsigned t = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x + t;
    bool inside = i < n;
    buf[t] = inside ? x[i] : 0u;
    __syncthreads();
    for (unsigned offset = 1; offset < blockDim.x; offset <<= 1) {
        unsigned add = 0;
        if (t >= offset) {
            add = buf[t - offset];
        }
        __syncthreads();
        buf[t] = buf[t] + add;
        __syncthreads();
    }
    if (inside) {
        out[i] = buf[t];
    }
}
