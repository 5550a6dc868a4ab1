// The CUDA C twin of examples/gelu.rk: GELU, the tanh form,
// y[i] = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) for i < n, one
// thread per element, with CUDA's tanhf. Blocks of 256 threads.
extern "C" __global__ void gelu(unsigned n, const float* x, float* y) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        float inner = 0.7978846f * (v + 0.044715f * (v * v * v));
        y[i] = 0.5f * v * (1.0f + tanhf(inner));
    }
}
