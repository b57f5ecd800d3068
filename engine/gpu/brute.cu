// Brute-force all-pairs rho and delta: one thread per query, points streamed through shared memory in tiles.
// The reference and benchmark baseline for the VP-tree kernels; same float32 distance rule (--fmad=false).
// MAXD is a compile-time bound on d so that the query stays in registers.

typedef long long i64;
#define TILE 128

template <int MAXD>
__device__ __forceinline__ void load_query(const float* __restrict__ coords, i64 n, int d, i64 i, float* q) {
#pragma unroll
    for (int c = 0; c < MAXD; ++c) q[c] = c < d ? coords[c * n + i] : 0.0f;
}

// squared distance from tile point t to the query, point minus query, dimensions in order
template <int MAXD>
__device__ __forceinline__ float tile_sq(const float* tile, int t, int d, const float* q) {
    float acc = 0.0f;
#pragma unroll
    for (int c = 0; c < MAXD; ++c)
        if (c < d) {
            float diff = tile[c * TILE + t] - q[c];
            acc += diff * diff;
        }
    return acc;
}

__device__ __forceinline__ void load_tile(const float* __restrict__ coords, i64 n, int d, i64 base, float* tile) {
    for (int idx = threadIdx.x; idx < TILE * d; idx += blockDim.x) {
        int c = idx / TILE, t = idx % TILE;
        tile[idx] = base + t < n ? coords[c * n + base + t] : 0.0f;
    }
}

template <int MAXD, bool GAUSSIAN>
__global__ void brute_rho(const float* __restrict__ coords, i64 n, int d, float reach2, double inv_dc2, double* __restrict__ rho) {
    extern __shared__ float tile[];
    const i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    float q[MAXD];
    if (i < n) load_query<MAXD>(coords, n, d, i, q);
    double total = 0.0;
    long long count = 0;
    for (i64 base = 0; base < n; base += TILE) {
        load_tile(coords, n, d, base, tile);
        __syncthreads();
        if (i < n) {
            const int m = (int)min((i64)TILE, n - base);
            for (int t = 0; t < m; ++t) {
                const float d2 = tile_sq<MAXD>(tile, t, d, q);
                if (GAUSSIAN) {
                    if (d2 < reach2 && base + t != i) total += exp(-(double)d2 * inv_dc2);
                } else {
                    count += d2 < reach2;
                }
            }
        }
        __syncthreads();
    }
    if (i < n) rho[i] = GAUSSIAN ? total : (double)(count - 1);
}

// nearest denser point (rank order given), ties to the smaller index; the densest gets its farthest distance
template <int MAXD>
__global__ void brute_delta(const float* __restrict__ coords, i64 n, int d, const i64* __restrict__ rank,
                            float* __restrict__ delta2, i64* __restrict__ parent) {
    extern __shared__ float tile[];
    __shared__ i64 tile_rank[TILE];
    const i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    float q[MAXD];
    i64 my_rank = 0;
    if (i < n) { load_query<MAXD>(coords, n, d, i, q); my_rank = rank[i]; }
    float best = __int_as_float(0x7f800000), farthest = 0.0f;
    i64 best_id = -1;
    for (i64 base = 0; base < n; base += TILE) {
        load_tile(coords, n, d, base, tile);
        for (int t = threadIdx.x; t < TILE; t += blockDim.x) tile_rank[t] = base + t < n ? rank[base + t] : 0;
        __syncthreads();
        if (i < n) {
            const int m = (int)min((i64)TILE, n - base);
            for (int t = 0; t < m; ++t) {
                const float d2 = tile_sq<MAXD>(tile, t, d, q);
                farthest = fmaxf(farthest, d2);
                if (tile_rank[t] < my_rank && d2 < best) { best = d2; best_id = base + t; }  // ascending index: strict < keeps the smallest
            }
        }
        __syncthreads();
    }
    if (i < n) {
        delta2[i] = best_id >= 0 ? best : farthest;
        parent[i] = best_id;
    }
}
