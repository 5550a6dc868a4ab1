// The CUDA C twin of examples/saxpy.rk: y[i] = a * x[i] + y[i] for i < n,
// one thread per element. relok bench kernels compiles it with NVRTC
// (CuPy's RawKernel, its default options) and launches it like the .rk:
// blocks of 256 threads, as many as cover n.
extern "C" __global__ void saxpy(unsigned n, float a, const float* x, float* y) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = a * x[i] + y[i];
    }
}
