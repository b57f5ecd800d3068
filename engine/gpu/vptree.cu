// dpstudio GPU kernels: the GDPC VP-tree, rho, delta/parent, labels and halo.
//
// Layout and semantics are those of dpstudio/engine/vptree.py: coords are (d, n) in tree order, node k owns
// tree positions [j*n >> level, (j+1)*n >> level). Compiled with --fmad=false so that the float32 distance
// rule (squared differences summed in dimension order) is bit-identical to the CPU backend.

typedef long long i64;
#define FULL_MASK 0xffffffffu
#define STACK 64

__device__ __forceinline__ i64 seg_start(i64 n, int level, i64 j) { return (j * n) >> level; }

// node of `level` owning tree position t: the inverse of seg_start
__device__ __forceinline__ i64 node_at(i64 n, int level, i64 t) { return (((t + 1) << level) + n - 1) / n - 1; }

// squared distance between tree position p (of coords) and a row-major point (a node centre)
__device__ __forceinline__ float sq_to_row(const float* __restrict__ coords, i64 n, int d, i64 p, const float* __restrict__ row) {
    float acc = 0.0f;
    for (int c = 0; c < d; ++c) {
        float diff = coords[c * n + p] - row[c];
        acc += diff * diff;
    }
    return acc;
}

// squared distance between two tree positions, point minus query as on the CPU
__device__ __forceinline__ float sq_between(const float* __restrict__ coords, i64 n, int d, i64 point, i64 query) {
    float acc = 0.0f;
    for (int c = 0; c < d; ++c) {
        float diff = coords[c * n + point] - coords[c * n + query];
        acc += diff * diff;
    }
    return acc;
}

__device__ __forceinline__ float sq_rows(const float* __restrict__ a, const float* __restrict__ b, int d) {
    float acc = 0.0f;
    for (int c = 0; c < d; ++c) {
        float diff = a[c] - b[c];
        acc += diff * diff;
    }
    return acc;
}

// lower and upper bounds on the distance to any point of a ball, widened by the relative slack
struct Bounds { double lower, upper; };
__device__ __forceinline__ Bounds ball_bounds(float d2, float radius, double slack) {
    double s = sqrt((double)d2), r = (double)radius, pad = (s + r) * slack;
    return {s - r - pad, s + r + pad};
}

// the same in float, for the hot loops of rho and delta: sqrt, the sum, the difference and the pad each round by at most
// 2^-24 of s + r, so FLOAT_BOUND_SLACK (2^-21) added to the relative slack covers them
#define FLOAT_BOUND_SLACK 4.76837158203125e-07f
struct BoundsF { float lower, upper; };
__device__ __forceinline__ BoundsF ball_bounds_f(float d2, float radius, double slack) {
    const float s = sqrtf(d2), r = radius, pad = (s + r) * ((float)slack + FLOAT_BOUND_SLACK);
    return {s - r - pad, s + r + pad};
}

// one warp per leaf of queries: lane l serves tree position qs + l; idle lanes (a leaf holds at most 32 points)
// shadow the first query so that every lane can join warp-wide votes, and write nothing
struct LeafWarp {
    i64 leaf, own, qs, qe, p, pq;
    int lane;
    bool active;
};

__device__ __forceinline__ bool leaf_warp(i64 n, int depth, LeafWarp& w) {
    const i64 n_leaves = 1LL << depth;
    w.leaf = (blockIdx.x * (i64)blockDim.x + threadIdx.x) >> 5;
    w.lane = threadIdx.x & 31;
    w.own = n_leaves - 1 + w.leaf;
    w.qs = seg_start(n, depth, w.leaf);
    w.qe = seg_start(n, depth, w.leaf + 1);
    w.p = w.qs + w.lane;
    w.active = w.leaf < n_leaves && w.p < w.qe;
    w.pq = w.active ? w.p : w.qs;
    return w.leaf < n_leaves;  // false for the whole warp at once
}

// ---------------------------------------------------------------------------------------------------------
// index construction

// key of tree position t at one level: its node in the high bits, its squared distance to the node's vantage
// point in the low bits (non-negative float bits sort like the floats), so one stable radix sort of all keys
// sorts every node's run by distance at once
extern "C" __global__ void level_keys(const float* __restrict__ points, int d, i64 n, int level,
                                      const i64* __restrict__ order, const i64* __restrict__ vantage,
                                      unsigned long long* __restrict__ keys) {
    i64 t = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (t >= n) return;
    i64 j = node_at(n, level, t);
    const float* p = points + order[t] * d;
    const float* v = points + vantage[j] * d;
    float acc = 0.0f;
    for (int c = 0; c < d; ++c) {
        float diff = p[c] - v[c];
        acc += diff * diff;
    }
    keys[t] = ((unsigned long long)j << 32) | (unsigned long long)__float_as_uint(acc);
}

// per node of the level just sorted: split radius and the vantage points of its two children
extern "C" __global__ void split_nodes(i64 n, int level, const unsigned long long* __restrict__ sorted_keys,
                                       const i64* __restrict__ order, float* __restrict__ split_radius,
                                       i64* __restrict__ next_vantage) {
    i64 j = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (j >= (1LL << level)) return;
    i64 end = seg_start(n, level, j + 1), mid = seg_start(n, level + 1, 2 * j + 1);
    float near2 = __uint_as_float((unsigned)(sorted_keys[mid - 1] & 0xffffffffu));
    split_radius[(1LL << level) - 1 + j] = (float)sqrt((double)near2);
    next_vantage[2 * j] = order[mid - 1];
    next_vantage[2 * j + 1] = order[end - 1];
}

// cover radius and smallest original id of every node holding tree position t, all levels in one pass;
// lanes of a warp that share a node reduce first, so each warp issues one atomic per node
extern "C" __global__ void node_extents(const float* __restrict__ coords, i64 n, int d, int depth,
                                        const float* __restrict__ center, const i64* __restrict__ ids,
                                        unsigned* __restrict__ radius_bits, unsigned* __restrict__ min_id) {
    i64 t = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    bool active = t < n;
    for (int level = 0; level <= depth; ++level) {
        i64 k = active ? (1LL << level) - 1 + node_at(n, level, t) : -1 - (i64)(threadIdx.x & 31);
        unsigned group = __match_any_sync(FULL_MASK, k);
        unsigned r = 0u, id = 0xffffffffu;
        if (active) {
            r = __float_as_uint((float)sqrt((double)sq_to_row(coords, n, d, t, center + k * d)));
            id = (unsigned)ids[t];
        }
        r = __reduce_max_sync(group, r);
        id = __reduce_min_sync(group, id);
        if (active && (threadIdx.x & 31) == __ffs(group) - 1) {
            atomicMax(radius_bits + k, r);
            atomicMin(min_id + k, id);
        }
    }
}

// minimum of an int value over every node's run (tree-order values), warp-aggregated like node_extents
extern "C" __global__ void node_min(const int* __restrict__ values, i64 n, int depth, int* __restrict__ out) {
    i64 t = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    bool active = t < n;
    int v = active ? values[t] : 0x7fffffff;
    for (int level = 0; level <= depth; ++level) {
        i64 k = active ? (1LL << level) - 1 + node_at(n, level, t) : -1 - (i64)(threadIdx.x & 31);
        unsigned group = __match_any_sync(FULL_MASK, k);
        int m = __reduce_min_sync(group, v);
        if (active && (threadIdx.x & 31) == __ffs(group) - 1) atomicMin(out + k, m);
    }
}

// ---------------------------------------------------------------------------------------------------------
// leaf blocks: the warp's 32 queries (tree positions [qs, qe)) against the points of one leaf [s, e), all
// pairs at once as a register tile. Lane l takes queries 4(l/4) .. +3 against points 8(l%4) .. +7, so each
// coordinate loaded serves 4 or 8 distances. Every lane must call these (they shuffle within groups of 4).

__device__ __forceinline__ void leaf_block_sq(const float* __restrict__ coords, i64 n, int d, i64 qs, i64 qe,
                                              i64 s, i64 e, int lane, float (&acc)[4][8]) {
    const int group = lane >> 2, part = lane & 3;
    i64 query[4], point[8];
    for (int a = 0; a < 4; ++a) query[a] = min(qs + 4 * group + a, qe - 1);  // reads past a run repeat its last
    for (int b = 0; b < 8; ++b) point[b] = min(s + 8 * part + b, e - 1);
    for (int a = 0; a < 4; ++a)
        for (int b = 0; b < 8; ++b) acc[a][b] = 0.0f;
    for (int c = 0; c < d; ++c) {
        const float* row = coords + (i64)c * n;
        float qv[4], pv[8];
        for (int a = 0; a < 4; ++a) qv[a] = row[query[a]];
        for (int b = 0; b < 8; ++b) pv[b] = row[point[b]];
        for (int a = 0; a < 4; ++a)
            for (int b = 0; b < 8; ++b) {
                const float diff = pv[b] - qv[a];  // point minus query, summed in dimension order: the float32 rule
                acc[a][b] += diff * diff;
            }
    }
}

// element `part` of a 4-element register array, without local memory
template <typename T>
__device__ __forceinline__ T pick(const T (&values)[4], int part) {
    return part == 0 ? values[0] : part == 1 ? values[1] : part == 2 ? values[2] : values[3];
}

// points of the leaf within reach of lane l's own query (query 4 * group + part = l)
__device__ __forceinline__ int leaf_block_hits(const float* __restrict__ coords, i64 n, int d, i64 qs, i64 qe,
                                               i64 s, i64 e, int lane, float reach2) {
    float acc[4][8];
    leaf_block_sq(coords, n, d, qs, qe, s, e, lane, acc);
    const int part = lane & 3;
    int hits[4];
    for (int a = 0; a < 4; ++a) {
        hits[a] = 0;
        for (int b = 0; b < 8; ++b) hits[a] += (s + 8 * part + b < e && acc[a][b] < reach2) ? 1 : 0;
        hits[a] += __shfl_xor_sync(FULL_MASK, hits[a], 1);  // the 4 lanes of a group hold 8 points each
        hits[a] += __shfl_xor_sync(FULL_MASK, hits[a], 2);
    }
    return pick(hits, part);
}

__device__ __forceinline__ bool nearer(float d2, i64 id, float best_d2, i64 best_id) {
    return d2 < best_d2 || (d2 == best_d2 && id < best_id);
}

// the nearest of the (d2, id) held by the 4 lanes of a group, in all 4
__device__ __forceinline__ void group_nearest(float& d2, i64& id) {
    for (int mask = 1; mask <= 2; mask <<= 1) {
        const float other_d2 = __shfl_xor_sync(FULL_MASK, d2, mask);
        const i64 other_id = __shfl_xor_sync(FULL_MASK, id, mask);
        if (nearer(other_d2, other_id, d2, id)) { d2 = other_d2; id = other_id; }
    }
}

// the nearest point of the leaf denser than lane l's own query (ties by smaller id), merged into (best_d2, best_id);
// query_rank holds the ranks of the lane's 4 tile queries
__device__ __forceinline__ void leaf_block_nearest(const float* __restrict__ coords, i64 n, int d, i64 qs, i64 qe,
                                                   i64 s, i64 e, int lane, const i64* __restrict__ ids,
                                                   const int* __restrict__ rank, const int (&query_rank)[4],
                                                   float& best_d2, i64& best_id) {
    float acc[4][8];
    leaf_block_sq(coords, n, d, qs, qe, s, e, lane, acc);
    const int part = lane & 3;
    int point_rank[8];
    i64 point_id[8];
    for (int b = 0; b < 8; ++b) {
        const i64 t = s + 8 * part + b;
        point_rank[b] = t < e ? rank[t] : 0x7fffffff;  // past the leaf: denser than nothing
        point_id[b] = t < e ? ids[t] : 0;
    }
    float found_d2[4];
    i64 found_id[4];
    for (int a = 0; a < 4; ++a) {
        found_d2[a] = __int_as_float(0x7f800000);  // +inf
        found_id[a] = 0x7fffffffffffffffLL;
        for (int b = 0; b < 8; ++b)
            if (point_rank[b] < query_rank[a] && nearer(acc[a][b], point_id[b], found_d2[a], found_id[a])) {
                found_d2[a] = acc[a][b];
                found_id[a] = point_id[b];
            }
        group_nearest(found_d2[a], found_id[a]);
    }
    const float mine_d2 = pick(found_d2, part);
    const i64 mine_id = pick(found_id, part);
    if (nearer(mine_d2, mine_id, best_d2, best_id)) { best_d2 = mine_d2; best_id = mine_id; }
}

// ---------------------------------------------------------------------------------------------------------
// tensor-core leaf tiles, for higher d: the same 32 x 32 pairs from |q|^2 + |p|^2 - 2 q.p, the dot products as
// 3xTF32 mma (each float split into a TF32 head and tail; only tail x tail is dropped), coordinates centred on
// the query leaf's centre so that cancellation stays small. The result comes with a bound on its distance from
// the float32 rule, so a caller decides every pair outside the bound at once and recomputes the few inside it
// with the rule itself: results stay identical to the scalar tiles.
//
// mma.m16n8k8 layout (lane = 4 g + t): A register r holds (row g + 8(r & 1), col t + 4(r >> 1)), B register r
// holds (row t + 4r, col g), C register r holds (row g + 8(r >> 1), col 2t + (r & 1)). Two m-tiles and four
// n-tiles cover the 32 x 32 pairs, so lane (g, t) ends up with queries g + 8a (a < 4) against the 8 points at
// tile_col(b, t) (b < 8): the same 4 x 8 shape as the scalar tiles, in another order.
//
// Tiles read whole 32-point blocks from a leaf's first position, past a shorter leaf into the next one (the GPU
// tree's coords carry 32 floats of slack after the last row for the last leaf); those rows and columns are not
// "real" and count for nothing.

__device__ __forceinline__ int tile_col(int b, int t) { return 8 * (b >> 1) + 2 * t + (b & 1); }

// head: x with its low 13 mantissa bits cleared, a TF32 value; tail: x - head, exact in float32. The tensor
// core reads the tail to TF32 precision (it ignores the low bits), which loses at most 2^-10 of the tail.
__device__ __forceinline__ void split_tf32(float x, unsigned& head, unsigned& tail) {
    head = __float_as_uint(x) & 0xffffe000u;
    tail = __float_as_uint(x - __uint_as_float(head));
}

__device__ __forceinline__ void mma_tf32(float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// the largest of a non-negative float over the warp (such floats order as their bits)
__device__ __forceinline__ float warp_max(float value) {
    return __uint_as_float(__reduce_max_sync(FULL_MASK, __float_as_uint(value)));
}

// the warp's queries as tile rows: lane (g, t) holds rows g + 8a, centred on the query leaf's centre
struct QueryRows {
    const float* origin;
    i64 first;       // tree position of the lane's row g
    float norm2[4];  // |q - origin|^2 of rows g + 8a
    float reach;     // the largest |q - origin| over the leaf, rounded up
};

__device__ __forceinline__ QueryRows query_rows(const float* __restrict__ coords, i64 n, int d, i64 qs, i64 qe,
                                                const float* __restrict__ origin, int lane) {
    QueryRows rows;
    rows.origin = origin;
    rows.first = qs + (lane >> 2);
    for (int a = 0; a < 4; ++a) rows.norm2[a] = 0.0f;
    const float* x = coords + rows.first;
    for (int c = 0; c < d; ++c, x += n) {
        const float o = origin[c];
        for (int a = 0; a < 4; ++a) {
            const float diff = x[8 * a] - o;
            rows.norm2[a] += diff * diff;
        }
    }
    float widest = 0.0f;
    for (int a = 0; a < 4; ++a)
        if (rows.first + 8 * a < qe) widest = fmaxf(widest, rows.norm2[a]);  // rows past the leaf are not real
    rows.reach = __fsqrt_ru(warp_max(widest));
    return rows;
}

// approximate squared distances of the tile, and a bound on their distance from the float32 rule. With
// R = max|q - o| + max|p - o| over the real rows and columns, every term below is at most R^2: the dropped
// tail x tail products and the tails' TF32 reading (3.1 * 2^-20 of the sum of |q_c p_c|, at most R^2 / 2), at
// most 3 ceil(d / 8) tensor-core accumulations (each taken to lose 2^-19 of what it adds, several times the
// truncation measured on these units), the float32 norms, the centring and the rule itself ((d + 4) 2^-24).
// The absolute term covers flushed subnormals.
__device__ __forceinline__ float tile_sq(const float* __restrict__ coords, i64 n, int d, const QueryRows& rows,
                                         i64 s, i64 e, int lane, float (&approx)[4][8]) {
    const int t = lane & 3;
    float acc[2][4][4], point_norm2[4];
    for (int m = 0; m < 2; ++m)
        for (int nt = 0; nt < 4; ++nt)
            for (int r = 0; r < 4; ++r) acc[m][nt][r] = 0.0f;
    for (int nt = 0; nt < 4; ++nt) point_norm2[nt] = 0.0f;
    // lane (g, t) reads dimensions t and t + 4 of each group of 8: queries at rows g + 8a, points at g + 8 nt
    const float* q = coords + (i64)t * n + rows.first;
    const float* p = coords + (i64)t * n + s + (lane >> 2);
    const i64 step = 4 * n;
    for (int k0 = 0; k0 < d; k0 += 8, q += 2 * step, p += 2 * step) {
        unsigned a_head[2][4], a_tail[2][4], b_head[4][2], b_tail[4][2];
        for (int h = 0; h < 2; ++h) {
            const int c = k0 + t + 4 * h;
            const bool real = c < d;  // dimensions past d are zeros
            const float o = real ? rows.origin[c] : 0.0f;
            for (int a = 0; a < 4; ++a) {
                const float x = real ? q[h * step + 8 * a] - o : 0.0f;
                split_tf32(x, a_head[a >> 1][(a & 1) + 2 * h], a_tail[a >> 1][(a & 1) + 2 * h]);
            }
            for (int nt = 0; nt < 4; ++nt) {
                const float y = real ? p[h * step + 8 * nt] - o : 0.0f;
                point_norm2[nt] += y * y;
                split_tf32(y, b_head[nt][h], b_tail[nt][h]);
            }
        }
        for (int m = 0; m < 2; ++m)
            for (int nt = 0; nt < 4; ++nt) {
                mma_tf32(acc[m][nt], a_tail[m], b_head[nt]);
                mma_tf32(acc[m][nt], a_head[m], b_tail[nt]);
                mma_tf32(acc[m][nt], a_head[m], b_head[nt]);
            }
    }
    float widest = 0.0f;
    for (int nt = 0; nt < 4; ++nt) {  // the 4 lanes of a group hold a quarter of point 8 nt + g's dimensions each
        point_norm2[nt] += __shfl_xor_sync(FULL_MASK, point_norm2[nt], 1);
        point_norm2[nt] += __shfl_xor_sync(FULL_MASK, point_norm2[nt], 2);
        if (s + 8 * nt + (lane >> 2) < e) widest = fmaxf(widest, point_norm2[nt]);
    }
    widest = warp_max(widest);
    for (int b = 0; b < 8; ++b) {
        const float p_norm2 = __shfl_sync(FULL_MASK, point_norm2[b >> 1], (2 * t + (b & 1)) * 4);
        for (int a = 0; a < 4; ++a)  // -2 acc is exact, so the fused form rounds once, like a subtraction
            approx[a][b] = __fmaf_rn(-2.0f, acc[a >> 1][b >> 1][2 * (a & 1) + (b & 1)], rows.norm2[a] + p_norm2);
    }
    const float r = __fadd_ru(rows.reach, __fsqrt_ru(widest));
    const float coef = (float)(6 * ((d + 7) / 8) + d + 8) * 9.5367431640625e-07f;  // 2^-20
    return __fadd_ru(__fmul_ru(coef, __fmul_ru(r, r)), 1e-35f);
}

// the lane's 4 row values of a group-replicated array, delivered to the lane that owns the query (query l sits in
// row l of lanes 4 (l % 8) .. +3, as entry l / 8)
template <typename T>
__device__ __forceinline__ T row_to_owner(const T (&values)[4], int lane) {
    return __shfl_sync(FULL_MASK, pick(values, lane & 3), (lane & 7) * 4 + (lane >> 3));
}

// points of the leaf within reach of lane l's own query; rows not in `wanted` may come back short
__device__ __forceinline__ int tile_hits(const float* __restrict__ coords, i64 n, int d, const QueryRows& rows,
                                         i64 s, i64 e, int lane, float reach2, unsigned wanted) {
    float approx[4][8];
    const float err = tile_sq(coords, n, d, rows, s, e, lane, approx);
    const float surely_in = __fsub_rd(reach2, err), surely_out = __fadd_ru(reach2, err);
    const int t = lane & 3;
    int hits[4];
    unsigned unsure = 0u;
    for (int a = 0; a < 4; ++a) {
        hits[a] = 0;
        const bool row_wanted = (wanted >> ((lane >> 2) + 8 * a)) & 1u;
        for (int b = 0; b < 8; ++b) {
            const bool real = s + tile_col(b, t) < e;
            const bool in = approx[a][b] < surely_in, out = approx[a][b] >= surely_out;  // NaN: neither
            hits[a] += (real && in) ? 1 : 0;
            if (row_wanted && real && !in && !out) unsure |= 1u << (8 * a + b);
        }
    }
    for (int a = 0; a < 4; ++a) {  // a fixed per row (no register array indexed at run time)
        for (unsigned row = (unsure >> (8 * a)) & 0xffu; row; row &= row - 1) {  // too near the reach: the rule decides
            const i64 point = s + tile_col(__ffs(row) - 1, t);
            hits[a] += sq_between(coords, n, d, point, rows.first + 8 * a) < reach2 ? 1 : 0;
        }
        hits[a] += __shfl_xor_sync(FULL_MASK, hits[a], 1);
        hits[a] += __shfl_xor_sync(FULL_MASK, hits[a], 2);
    }
    return row_to_owner(hits, lane);
}

// the nearest denser point of the leaf for every row, merged into the group-replicated (row_d2, row_id). A point
// is recomputed with the float32 rule only when its lower bound does not exceed the row's best so far or the
// smallest upper bound the tile offers: usually the one point that improves the row, if any.
__device__ __forceinline__ bool tile_nearest(const float* __restrict__ coords, i64 n, int d, const QueryRows& rows,
                                             i64 s, i64 e, int lane, const i64* __restrict__ ids,
                                             const int* __restrict__ rank, const int (&row_rank)[4],
                                             float (&row_d2)[4], i64 (&row_id)[4]) {
    float approx[4][8];
    const float err = tile_sq(coords, n, d, rows, s, e, lane, approx);
    const int t = lane & 3;
    int point_rank[8];
    for (int b = 0; b < 8; ++b) point_rank[b] = s + tile_col(b, t) < e ? rank[s + tile_col(b, t)] : 0x7fffffff;
    unsigned maybe = 0u;
    for (int a = 0; a < 4; ++a) {
        float limit = row_d2[a];
        for (int b = 0; b < 8; ++b)
            if (point_rank[b] < row_rank[a]) limit = fminf(limit, __fadd_ru(approx[a][b], err));
        limit = fminf(limit, __shfl_xor_sync(FULL_MASK, limit, 1));
        limit = fminf(limit, __shfl_xor_sync(FULL_MASK, limit, 2));
        for (int b = 0; b < 8; ++b)
            if (point_rank[b] < row_rank[a] && !(__fsub_rd(approx[a][b], err) > limit)) maybe |= 1u << (8 * a + b);
    }
    if (!__any_sync(FULL_MASK, maybe)) return false;
    for (int a = 0; a < 4; ++a) {
        float found_d2 = row_d2[a];
        i64 found_id = row_id[a];
        for (unsigned row = (maybe >> (8 * a)) & 0xffu; row; row &= row - 1) {
            const i64 point = s + tile_col(__ffs(row) - 1, t);
            const float d2 = sq_between(coords, n, d, point, rows.first + 8 * a);
            if (nearer(d2, ids[point], found_d2, found_id)) { found_d2 = d2; found_id = ids[point]; }
        }
        group_nearest(found_d2, found_id);
        row_d2[a] = found_d2;
        row_id[a] = found_id;
    }
    return true;
}

// ---------------------------------------------------------------------------------------------------------
// rho: one warp per leaf of queries (tree order, so a warp's queries are neighbours) walks the tree once.
// Each stack entry carries the lanes still undecided about that node: every such lane tests the node's ball
// for its own query, counts the node at once when it lies inside the reach, drops it when outside, and the
// warp descends only while some lane is undecided. At a leaf the whole warp computes all query-point pairs as a
// register tile (tensor-core tiles when TENSOR), and the undecided lanes take their counts.

template <bool GAUSSIAN, bool TENSOR>
__global__ void rho_leaves(const float* __restrict__ coords, i64 n, int d, int depth,
                           const float* __restrict__ center, const float* __restrict__ radius,
                           float reach2, double reach_lo, double reach_hi, double inv_dc2, double slack,
                           double* __restrict__ rho) {
    LeafWarp w;
    if (!leaf_warp(n, depth, w)) return;
    const int lane = w.lane;
    const i64 qs = w.qs, p = w.p, pq = w.pq;
    const bool active = w.active;
    double total = 0.0;
    // float bounds (every lane tests every node it reaches), so the reach is rounded outwards too
    const float reach_lo_f = __double2float_rd(reach_lo), reach_hi_f = __double2float_ru(reach_hi);
    QueryRows rows;
    if (TENSOR) rows = query_rows(coords, n, d, qs, w.qe, center + w.own * d, lane);

    i64 nodes[STACK];
    unsigned masks[STACK];
    nodes[0] = 0;
    masks[0] = __ballot_sync(FULL_MASK, active);
    int top = 1;
    while (top > 0) {
        --top;
        const i64 k = nodes[top];
        const bool mine_to_decide = (masks[top] >> lane) & 1u;
        const int level = 63 - __clzll(k + 1);
        const i64 j = k - ((1LL << level) - 1);
        const i64 s = seg_start(n, level, j), e = seg_start(n, level, j + 1);
        unsigned undecided = masks[top];
        if (!TENSOR || level < depth) {  // with tensor tiles a leaf is scanned untested: in high d its test rarely
                                         // decides anything and costs a good part of a tile
            const BoundsF mine = ball_bounds_f(sq_to_row(coords, n, d, pq, center + k * d), radius[k], slack);
            const bool outside = mine.lower >= reach_hi_f;
            const bool inside = !GAUSSIAN && mine.upper < reach_lo_f;
            if (mine_to_decide && inside) total += (double)(e - s);
            undecided = __ballot_sync(FULL_MASK, mine_to_decide && !outside && !inside);
            if (!undecided) continue;
        }
        if (level < depth) {
            nodes[top] = 2 * k + 1; masks[top] = undecided;
            nodes[top + 1] = 2 * k + 2; masks[top + 1] = undecided;
            top += 2;
            continue;
        }
        if (GAUSSIAN) {
            if ((undecided >> lane) & 1u) {
                for (i64 t = s; t < e; ++t) {
                    float d2 = sq_between(coords, n, d, t, p);
                    if (d2 < reach2 && t != p) total += exp(-(double)d2 * inv_dc2);
                }
            }
        } else {
            const int hits = TENSOR ? tile_hits(coords, n, d, rows, s, e, lane, reach2, undecided)
                                    : leaf_block_hits(coords, n, d, qs, w.qe, s, e, lane, reach2);
            if ((undecided >> lane) & 1u) total += (double)hits;
        }
    }
    if (active) rho[p] = GAUSSIAN ? total : total - 1.0;  // a cut-off count includes the point itself
}

// ---------------------------------------------------------------------------------------------------------
// delta/parent: one warp per leaf of queries walks the tree, the child nearer to the warp's own leaf first so that
// every lane's best shrinks early. A node is dropped for a lane when it holds nothing denser (smallest density
// rank), or its ball lies beyond the lane's best distance, or at it with only larger ids (smallest id). Leaves
// are searched as register tiles (tensor-core tiles when TENSOR); a lane takes any denser point a leaf offers even
// when it did not need that leaf, which is always right (delta is a minimum over all denser points). Ties go to the
// smaller id.

template <bool TENSOR>  // at most 128 registers, so two blocks share an SM (the tensor variant would take 140)
__global__ void __launch_bounds__(256, 2)
    delta_leaves(const float* __restrict__ coords, i64 n, int d, int depth, const i64* __restrict__ ids,
                 const int* __restrict__ rank, const float* __restrict__ center, const float* __restrict__ radius,
                 const int* __restrict__ min_rank, const unsigned* __restrict__ min_id, double slack,
                 float* __restrict__ delta2, i64* __restrict__ parent) {
    LeafWarp w;
    if (!leaf_warp(n, depth, w)) return;
    const int lane = w.lane, group = lane >> 2;
    const i64 own = w.own, qs = w.qs, qe = w.qe, p = w.p, pq = w.pq;
    const int my_rank = w.active ? rank[p] : 0;  // rank 0 (the densest, or an idle lane) wants nothing
    int query_rank[4];  // the ranks of the lane's scalar-tile queries
    if (!TENSOR)
        for (int a = 0; a < 4; ++a) query_rank[a] = rank[min(qs + 4 * group + a, qe - 1)];
    float best_d2 = __int_as_float(0x7f800000);  // +inf
    i64 best_id = 0x7fffffffffffffffLL;
    // tensor tiles keep every row's best in the row's 4 lanes; the lane's own query's best follows it
    QueryRows rows;
    int row_rank[4];
    float row_d2[4];
    i64 row_id[4];
    if (TENSOR) {
        rows = query_rows(coords, n, d, qs, qe, center + own * d, lane);
        for (int a = 0; a < 4; ++a) {
            const i64 q = qs + group + 8 * a;
            row_rank[a] = q < qe ? rank[q] : 0;  // rows past the leaf want nothing
            row_d2[a] = best_d2;
            row_id[a] = best_id;
        }
    }

    // each stack entry carries the lanes that may still find something in that node
    i64 nodes[STACK];
    unsigned masks[STACK];
    nodes[0] = 0;
    masks[0] = __ballot_sync(FULL_MASK, my_rank > 0);
    int top = 1;
    while (top > 0) {
        --top;
        const i64 k = nodes[top];
        const int level = 63 - __clzll(k + 1);
        bool relevant = ((masks[top] >> lane) & 1u) && min_rank[k] < my_rank;
        if (!TENSOR || level < depth) {  // with tensor tiles a leaf is scanned without its ball test, as in rho
            const float best = __fsqrt_ru(best_d2);  // rounded up, and the bound rounded down: a skip is always safe
            const float lower = ball_bounds_f(sq_to_row(coords, n, d, pq, center + k * d), radius[k], slack).lower;
            relevant = relevant && !(lower > best || (lower >= best && (i64)min_id[k] > best_id));
        }
        const unsigned still = __ballot_sync(FULL_MASK, relevant);
        if (!still) continue;
        if (level == depth) {
            const i64 j = k - ((1LL << level) - 1);
            const i64 s = seg_start(n, level, j), e = seg_start(n, level, j + 1);
            if (!TENSOR) {
                leaf_block_nearest(coords, n, d, qs, qe, s, e, lane, ids, rank, query_rank, best_d2, best_id);
            } else if (tile_nearest(coords, n, d, rows, s, e, lane, ids, rank, row_rank, row_d2, row_id)) {
                best_d2 = row_to_owner(row_d2, lane);
                best_id = row_to_owner(row_id, lane);
            }
            continue;
        }
        // the child nearer to the query leaf's centre goes on top; the lanes share the dimensions, and the xor
        // butterfly gives every lane the same sums (each step adds the same two partial sums)
        float to_left = 0.0f, to_right = 0.0f;
        for (int c = lane; c < d; c += 32) {
            const float mine = center[own * d + c];
            const float left = center[(2 * k + 1) * d + c] - mine, right = center[(2 * k + 2) * d + c] - mine;
            to_left += left * left;
            to_right += right * right;
        }
        for (int mask = 16; mask >= 1; mask >>= 1) {
            to_left += __shfl_xor_sync(FULL_MASK, to_left, mask);
            to_right += __shfl_xor_sync(FULL_MASK, to_right, mask);
        }
        const i64 near = to_right < to_left ? 2 * k + 2 : 2 * k + 1, far = 4 * k + 3 - near;
        nodes[top] = far; masks[top] = still;
        nodes[top + 1] = near; masks[top + 1] = still;
        top += 2;
    }
    if (w.active && my_rank > 0) {
        delta2[p] = best_d2;
        parent[p] = best_id;
    }
}

extern "C" __global__ void sq_to_point(const float* __restrict__ coords, i64 n, int d, i64 p, float* __restrict__ out) {
    i64 t = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (t < n) out[t] = sq_between(coords, n, d, t, p);
}

// ---------------------------------------------------------------------------------------------------------
// labels: pointer jumping over parent links; one launch per pass, no host round trip between passes

extern "C" __global__ void jump_to_center(i64 n, i64* __restrict__ ancestor, i64* __restrict__ label) {
    i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (i >= n || label[i] >= 0) return;
    const i64 a = ancestor[i];
    const i64 found = label[a];
    if (found >= 0) label[i] = found;
    else ancestor[i] = ancestor[a];
}

// ---------------------------------------------------------------------------------------------------------
// halo: for each point, the largest rho among points of another label within dc (warp per leaf, as rho),
// skipping nodes whose points all share the query's label or hold nothing denser than the best so far

extern "C" __global__ void border_rho(const float* __restrict__ coords, i64 n, int d, int depth,
                                      const int* __restrict__ labels, const double* __restrict__ rho,
                                      const float* __restrict__ center, const float* __restrict__ radius,
                                      const int* __restrict__ node_label, const double* __restrict__ node_max_rho,
                                      float dc2, double dc_lo, double dc_hi, double slack,
                                      double* __restrict__ pair_rho) {
    LeafWarp w;
    if (!leaf_warp(n, depth, w)) return;
    const i64 own = w.own, p = w.p, pq = w.pq;
    const bool active = w.active;
    const int my_label = labels[pq];
    const double own_pad = (double)radius[own] * (1.0 + slack);
    double best = -1.0 / 0.0;

    i64 nodes[STACK];
    int levels[STACK];
    int top = 1;
    nodes[0] = 0; levels[0] = 0;
    while (top > 0) {
        --top;
        const i64 k = nodes[top];
        const int level = levels[top];
        const bool useful = active && node_label[k] != my_label && node_max_rho[k] > best;
        if (!__any_sync(FULL_MASK, useful)) continue;
        Bounds b = ball_bounds(sq_rows(center + own * d, center + k * d, d), radius[k], slack);
        if (b.lower - own_pad >= dc_hi) continue;
        const i64 j = k - ((1LL << level) - 1);
        if (level < depth) {
            nodes[top] = 2 * k + 1; levels[top] = level + 1;
            nodes[top + 1] = 2 * k + 2; levels[top + 1] = level + 1;
            top += 2;
            continue;
        }
        if (!useful) continue;
        Bounds mine = ball_bounds(sq_to_row(coords, n, d, p, center + k * d), radius[k], slack);
        if (mine.lower >= dc_hi) continue;
        if (mine.upper < dc_lo && node_label[k] >= 0) { best = node_max_rho[k]; continue; }
        for (i64 t = seg_start(n, level, j), e = seg_start(n, level, j + 1); t < e; ++t)
            if (labels[t] != my_label && rho[t] > best && sq_between(coords, n, d, t, p) < dc2) best = rho[t];
    }
    if (active) pair_rho[p] = (rho[p] + best) / 2.0;
}

// nonnegative doubles order like their bits as signed 64-bit integers; -1.0 ("no border") is below them all
extern "C" __global__ void cluster_border(const double* __restrict__ pair_rho, const int* __restrict__ labels, i64 n,
                                          long long* __restrict__ border_bits) {
    i64 t = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (t >= n || !(pair_rho[t] >= 0.0)) return;
    atomicMax(border_bits + labels[t], __double_as_longlong(pair_rho[t]));
}

// ---------------------------------------------------------------------------------------------------------
// lasso hit-testing, even-odd rule

extern "C" __global__ void points_in_polygon(const double* __restrict__ x, const double* __restrict__ y, i64 n,
                                             const double* __restrict__ polygon, int m, bool* __restrict__ inside) {
    i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (i >= n) return;
    bool crossings = false;
    for (int a = 0; a < m; ++a) {
        int b = (a + 1) % m;
        double xa = polygon[2 * a], ya = polygon[2 * a + 1], xb = polygon[2 * b], yb = polygon[2 * b + 1];
        if ((ya > y[i]) != (yb > y[i]) && x[i] < xa + (y[i] - ya) * (xb - xa) / (yb - ya)) crossings = !crossings;
    }
    inside[i] = crossings;
}
