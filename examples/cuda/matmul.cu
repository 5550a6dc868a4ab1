// The CUDA C twin of examples/matmul.rk: c = a * b with a: m x k, b: k x n,
// c: m x n, all row-major. Blocks of 16 x 16 threads each compute one
// 16 x 16 tile of c, staging tiles of a and b through shared memory.
#define TILE 16

extern "C" __global__ void matmul(unsigned m, unsigned n, unsigned k, const float* a, const float* b, float* c) {
    __shared__ float tile_a[TILE * TILE];
    __shared__ float tile_b[TILE * TILE];
    unsigned tx = threadIdx.x, ty = threadIdx.y;
    unsigned row = blockIdx.y * TILE + ty;
    unsigned col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (unsigned t = 0; t < k; t += TILE) {
        tile_a[ty * TILE + tx] = row < m && t + tx < k ? a[row * k + t + tx] : 0.0f;
        tile_b[ty * TILE + tx] = t + ty < k && col < n ? b[(t + ty) * n + col] : 0.0f;
        __syncthreads();
        for (unsigned kk = 0; kk < TILE; kk++) {
            acc += tile_a[ty * TILE + kk] * tile_b[kk * TILE + tx];
        }
        __syncthreads();
    }
    if (row < m && col < n) {
        c[row * n + col] = acc;
    }
}
