// Brute-force all-pairs rho, delta, DBSCAN and Borůvka rounds: one thread per query, points streamed through shared memory in tiles.
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
    long long units = 0, count = 0;  // Gaussian: whole units of 2^-32 per term (vptree.py's GAUSSIAN_UNIT)
    for (i64 base = 0; base < n; base += TILE) {
        load_tile(coords, n, d, base, tile);
        __syncthreads();
        if (i < n) {
            const int m = (int)min((i64)TILE, n - base);
            for (int t = 0; t < m; ++t) {
                const float d2 = tile_sq<MAXD>(tile, t, d, q);
                if (GAUSSIAN) {
                    if (d2 < reach2 && base + t != i) units += __double2ll_rn(exp(-(double)d2 * inv_dc2) * 4294967296.0);
                } else {
                    count += d2 < reach2;
                }
            }
        }
        __syncthreads();
    }
    if (i < n) rho[i] = GAUSSIAN ? (double)units * 2.3283064365386963e-10 : (double)(count - 1);
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

// ---------------------------------------------------------------------------------------------------------
// DBSCAN by all pairs, as cuML does it: eps-neighbour counts for the core test, connected components of the core
// points by label propagation over the all-pairs eps-adjacency (re-streamed every sweep, never materialized), then
// border points. label: -1 for a non-core point, else a core point of its component with an index <= its own.

// eps-neighbours of every point by the float32 rule d2 <= eps2, the point itself counted (scikit-learn's)
template <int MAXD>
__global__ void brute_eps_counts(const float* __restrict__ coords, i64 n, int d, float eps2, int* __restrict__ counts) {
    extern __shared__ float tile[];
    const i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    float q[MAXD];
    if (i < n) load_query<MAXD>(coords, n, d, i, q);
    int count = 0;
    for (i64 base = 0; base < n; base += TILE) {
        load_tile(coords, n, d, base, tile);
        __syncthreads();
        if (i < n) {
            const int m = (int)min((i64)TILE, n - base);
            for (int t = 0; t < m; ++t) count += tile_sq<MAXD>(tile, t, d, q) <= eps2;
        }
        __syncthreads();
    }
    if (i < n) counts[i] = count;
}

// one sweep: every core point finds the smallest label among its core eps-neighbours and, if it is below its own,
// hooks its root (its label, after brute_compress) and itself onto it
template <int MAXD>
__global__ void brute_hook(const float* __restrict__ coords, i64 n, int d, float eps2, int* label, int* changed) {
    extern __shared__ float tile[];
    __shared__ int tile_label[TILE];
    const i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    float q[MAXD];
    const int mine = i < n ? label[i] : -1;
    if (i < n) load_query<MAXD>(coords, n, d, i, q);
    int smallest = mine;
    for (i64 base = 0; base < n; base += TILE) {
        load_tile(coords, n, d, base, tile);
        for (int t = threadIdx.x; t < TILE; t += blockDim.x) tile_label[t] = base + t < n ? label[base + t] : -1;
        __syncthreads();
        if (mine >= 0) {
            const int m = (int)min((i64)TILE, n - base);
            for (int t = 0; t < m; ++t) {
                const int other = tile_label[t];
                if (other >= 0 && other < smallest && tile_sq<MAXD>(tile, t, d, q) <= eps2) smallest = other;
            }
        }
        __syncthreads();
    }
    if (mine >= 0 && smallest < mine) {
        atomicMin(label + mine, smallest);
        atomicMin(label + i, smallest);
        *changed = 1;
    }
}

// every core point's label becomes its root (labels only decrease along a chain, so the walk ends)
extern "C" __global__ void brute_compress(i64 n, int* label) {
    const i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (i >= n) return;
    const volatile int* fresh = label;
    int root = fresh[i];
    if (root < 0) return;
    for (int up = fresh[root]; up != root; up = fresh[root]) root = up;
    label[i] = root;
}

// a non-core point's smallest root among its core eps-neighbours (-1: noise); a core point's own root
template <int MAXD>
__global__ void brute_border(const float* __restrict__ coords, i64 n, int d, float eps2, const int* __restrict__ label,
                             int* __restrict__ root) {
    extern __shared__ float tile[];
    __shared__ int tile_label[TILE];
    const i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    float q[MAXD];
    const int mine = i < n ? label[i] : 0;
    if (i < n) load_query<MAXD>(coords, n, d, i, q);
    int best = -1;
    for (i64 base = 0; base < n; base += TILE) {
        load_tile(coords, n, d, base, tile);
        for (int t = threadIdx.x; t < TILE; t += blockDim.x) tile_label[t] = base + t < n ? label[base + t] : -1;
        __syncthreads();
        if (i < n && mine < 0) {
            const int m = (int)min((i64)TILE, n - base);
            for (int t = 0; t < m; ++t) {
                const int other = tile_label[t];
                if (other >= 0 && (best < 0 || other < best) && tile_sq<MAXD>(tile, t, d, q) <= eps2) best = other;
            }
        }
        __syncthreads();
    }
    if (i < n) root[i] = mine >= 0 ? mine : best;
}

// ---------------------------------------------------------------------------------------------------------
// one Borůvka round of the mutual-reachability MST by all pairs: every point's best edge to another component,
// keyed by (w2, u, v) as in graph.cu: high = w2 bits over the smaller id, low = the larger id

template <int MAXD>
__global__ void brute_min_edge(const float* __restrict__ coords, i64 n, int d, const float* __restrict__ core,
                               const int* __restrict__ comp, unsigned long long* __restrict__ best_high,
                               unsigned* __restrict__ best_low) {
    extern __shared__ float tile[];
    __shared__ int tile_comp[TILE];
    __shared__ float tile_core[TILE];
    const i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    float q[MAXD];
    const int mine = i < n ? comp[i] : -1;
    const float my_core = i < n ? core[i] : 0.0f;
    if (i < n) load_query<MAXD>(coords, n, d, i, q);
    unsigned long long high = 0x7f800000ffffffffULL;
    unsigned low = 0xffffffffu;
    for (i64 base = 0; base < n; base += TILE) {
        load_tile(coords, n, d, base, tile);
        for (int t = threadIdx.x; t < TILE; t += blockDim.x) {
            tile_comp[t] = base + t < n ? comp[base + t] : -1;
            tile_core[t] = base + t < n ? core[base + t] : 0.0f;
        }
        __syncthreads();
        if (i < n) {
            const int m = (int)min((i64)TILE, n - base);
            for (int t = 0; t < m; ++t) {
                if (tile_comp[t] == mine) continue;
                const float w2 = fmaxf(fmaxf(my_core, tile_core[t]), tile_sq<MAXD>(tile, t, d, q));
                const unsigned a = (unsigned)i, b = (unsigned)(base + t);
                const unsigned long long h = ((unsigned long long)__float_as_uint(w2) << 32) | min(a, b);
                if (h < high || (h == high && max(a, b) < low)) {
                    high = h;
                    low = max(a, b);
                }
            }
        }
        __syncthreads();
    }
    if (i < n) {
        best_high[i] = high;
        best_low[i] = low;
    }
}
