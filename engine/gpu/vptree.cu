// dpstudio GPU kernels: the GDPC VP-tree, rho, delta/parent, labels and halo.
//
// Layout and semantics are those of dpstudio/engine/vptree.py: coords are (d, n) in tree order, node j of `level`
// owns tree positions [leaf_start[j << (depth - level)], leaf_start[(j + 1) << (depth - level)]): after inserts and
// deletes leaves hold 0 .. 32 points, so every query kernel reads runs from leaf_start. The build kernels below
// (level_keys, split_nodes, node_extents) see a fresh tree, whose runs are the arithmetic [j*n >> level, ...).
// Compiled with --fmad=false so that the float32 distance rule (squared differences summed in dimension order) is
// bit-identical to the CPU backend.

typedef long long i64;
#define FULL_MASK 0xffffffffu
#define STACK 64

// first tree position of node j of `level` in a freshly built tree of n points (build kernels only)
__device__ __forceinline__ i64 seg_start(i64 n, int level, i64 j) { return (j * n) >> level; }

// node of `level` owning tree position t in a freshly built tree: the inverse of seg_start
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
// 2^-24 of s + r, so FLOAT_BOUND_SLACK (2^-21) added to the relative slack covers them (float_slack, once per kernel)
#define FLOAT_BOUND_SLACK 4.76837158203125e-07f

// A Gaussian term exp(-d^2 / dc^2) in whole units of 2^-32, rounded to nearest even as NumPy's rint (GAUSSIAN_UNIT)
#define GAUSSIAN_STEP 2.3283064365386963e-10  // 2^-32
__device__ __forceinline__ long long gaussian_units(float d2, double inv_dc2) {
    return __double2ll_rn(exp(-(double)d2 * inv_dc2) * 4294967296.0);
}
struct BoundsF { float lower, upper; };
__device__ __forceinline__ float float_slack(double slack) { return (float)slack + FLOAT_BOUND_SLACK; }
__device__ __forceinline__ BoundsF ball_bounds_f(float d2, float radius, float slack_f) {
    const float s = sqrtf(d2), r = radius, pad = (s + r) * slack_f;
    return {s - r - pad, s + r + pad};
}

// one warp per leaf of queries: lane l serves tree position qs + l; idle lanes (a leaf holds at most 32 points)
// shadow the first query so that every lane can join warp-wide votes, and write nothing
struct LeafWarp {
    i64 leaf, own, qs, qe, p, pq;
    int lane;
    bool active;
};

// false for the whole warp at once: past the last leaf, or an empty leaf (no queries, so nothing to do). The warps
// serve leaves first_leaf, first_leaf + 1, ... up to last_leaf (-1: every leaf), a share of them for one worker of a
// Dask cluster (distributed.py)
__device__ __forceinline__ bool leaf_warp(const i64* __restrict__ leaf_start, int depth, LeafWarp& w, i64 first_leaf = 0,
                                          i64 last_leaf = -1) {
    const i64 n_leaves = 1LL << depth;
    w.leaf = first_leaf + ((blockIdx.x * (i64)blockDim.x + threadIdx.x) >> 5);
    w.lane = threadIdx.x & 31;
    if (w.leaf >= (last_leaf < 0 ? n_leaves : last_leaf)) return false;
    w.own = n_leaves - 1 + w.leaf;
    w.qs = leaf_start[w.leaf];
    w.qe = leaf_start[w.leaf + 1];
    w.p = w.qs + w.lane;
    w.active = w.p < w.qe;
    w.pq = w.active ? w.p : w.qs;
    return w.qs < w.qe;
}

// a node on a walk's stack: its breadth-first index, its run of tree positions [start, end) (int: the GPU backend
// holds fewer than 2^31 points) and the lanes still undecided about it; 16 bytes, so one load pops it
struct __align__(16) Visit {
    int node, start, end;
    unsigned lanes;
};

__device__ __forceinline__ int node_level(int node) { return 31 - __clz(node + 1); }

// the first tree position of internal node `node`'s right child (for a leaf: a value that is not used). Walks load it
// as soon as they pop a node, so that the load overlaps the node's ball test.
__device__ __forceinline__ int child_split(const i64* __restrict__ leaf_start, int depth, int node) {
    const int level = node_level(node), shift = depth - level - 1;
    const i64 j = node - ((1 << level) - 1);
    return (int)leaf_start[shift >= 0 ? (2 * j + 1) << shift : 0];
}

// pushes the non-empty children of internal node v (the right one from tree position `mid`, child_split) for `lanes`:
// the one whose run holds tree position `toward` on top, else (and for NO_POSITION) the left one
#define NO_POSITION (-1)
__device__ __forceinline__ void push_children(Visit (&stack)[STACK], int& top, const Visit& v, int mid, unsigned lanes,
                                              i64 toward) {
    const Visit left{2 * v.node + 1, v.start, mid, lanes}, right{2 * v.node + 2, mid, v.end, lanes};
    const bool right_first = mid <= toward && toward < v.end;
    const Visit below = right_first ? left : right, above = right_first ? right : left;
    if (below.end > below.start) stack[top++] = below;
    if (above.end > above.start) stack[top++] = above;
}

// a walk tests its own query against thousands of node centres: with the scalar tiles (low d) the first SELF_DIMS
// coordinates stay in registers (4: the dimensions past d still cost predicated instructions in every test); the
// tensor-tile kernels (high d) are short of registers and read them all
#define SELF_DIMS 4
__device__ __forceinline__ void own_coords(const float* __restrict__ coords, i64 n, int d, i64 p, float (&self)[SELF_DIMS]) {
#pragma unroll
    for (int c = 0; c < SELF_DIMS; ++c) self[c] = c < d ? coords[c * n + p] : 0.0f;
}

// sq_to_row(coords, n, d, p, centre), bit for bit, with p's first coordinates taken from `self` unless IN_MEMORY
template <bool IN_MEMORY>
__device__ __forceinline__ float sq_to_centre(const float (&self)[SELF_DIMS], const float* __restrict__ coords, i64 n,
                                             int d, i64 p, const float* __restrict__ centre) {
    if (IN_MEMORY) return sq_to_row(coords, n, d, p, centre);
    float acc = 0.0f;
#pragma unroll
    for (int c = 0; c < SELF_DIMS; ++c)
        if (c < d) {
            const float diff = self[c] - centre[c];
            acc += diff * diff;
        }
    for (int c = SELF_DIMS; c < d; ++c) {
        const float diff = coords[c * n + p] - centre[c];
        acc += diff * diff;
    }
    return acc;
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

// minimum of an int value over every leaf's run (tree-order values; an empty leaf keeps the initial INT_MAX): one
// warp per leaf, each writing its own entry (the levels above take the minimum of two children, _node_min)
extern "C" __global__ void leaf_min(const int* __restrict__ values, const i64* __restrict__ leaf_start, int depth,
                                    int* __restrict__ out) {
    LeafWarp w;
    if (!leaf_warp(leaf_start, depth, w)) return;
    const int m = __reduce_min_sync(FULL_MASK, w.active ? values[w.p] : 0x7fffffff);
    if (w.lane == 0) out[w.own] = m;
}

// The cost pass that balances a Dask cluster's rho shares (distributed.py), as the CPU's costs_of_leaves computes it,
// bit for bit (the same bounds, in double): a listed leaf's points times 1 + the points of the leaves its ball's
// bounds leave undecided (with `once`, only those from its own leaf on). One warp per listed leaf walks the tree
// touching no point, its lanes testing the top 32 nodes of the warp's stack at a time. The stack stays sorted by level
// (children go on top, in their parents' order), so a round takes nodes of a level only when it also takes every node
// of the deeper levels (above them), and adds at most 64 of the next: no level ever holds more than 64, and COST_STACK
// holds 28 levels with room to spare (a walk that would pass it sets `overflow` instead of writing past it).
#define COST_WARPS 2
#define COST_STACK (96 * 28)
extern "C" __global__ void __launch_bounds__(32 * COST_WARPS)
    leaf_costs(const i64* __restrict__ leaf_start, const float* __restrict__ center, const float* __restrict__ radius,
               int d, int depth, double reach_lo, double reach_hi, int gaussian, double slack,
               const i64* __restrict__ leaves, i64 n_listed, int once, i64* __restrict__ costs, int* __restrict__ overflow) {
    __shared__ int stacks[COST_WARPS][COST_STACK];
    const i64 i = (blockIdx.x * (i64)blockDim.x + threadIdx.x) >> 5;
    if (i >= n_listed) return;  // the whole warp at once
    const int lane = threadIdx.x & 31;
    int* stack = stacks[threadIdx.x >> 5];
    const i64 leaf = leaves[i], first_leaf_node = (1LL << depth) - 1;
    const float* own_centre = center + (first_leaf_node + leaf) * d;
    const double pad = (double)radius[first_leaf_node + leaf] * (1.0 + slack);  // any query of the leaf is this near
    i64 scanned = 0;
    if (lane == 0) stack[0] = 0;
    int top = 1;
    __syncwarp();
    while (top > 0) {
        const int take = min(top, 32);
        top -= take;
        const int node = lane < take ? stack[top + lane] : 0;
        __syncwarp();  // every lane has read its node before the children overwrite the entries
        bool split = false;
        if (lane < take) {
            const Bounds b = ball_bounds(sq_rows(own_centre, center + (i64)node * d, d), radius[node], slack);
            const bool reached = !(b.lower - pad >= reach_hi), certain = !gaussian && b.upper + pad < reach_lo;
            if (reached && !certain) {
                const i64 j = node - first_leaf_node;
                if (j < 0) split = true;  // an internal node
                else if (!once || j >= leaf) scanned += leaf_start[j + 1] - leaf_start[j];
            }
        }
        const unsigned splitting = __ballot_sync(FULL_MASK, split);
        if (top + 2 * __popc(splitting) > COST_STACK) {
            if (lane == 0) atomicExch(overflow, 1);
            return;
        }
        if (split) {
            const int at = top + 2 * __popc(splitting & ((1u << lane) - 1));
            stack[at] = 2 * node + 1;
            stack[at + 1] = 2 * node + 2;
        }
        top += 2 * __popc(splitting);
        __syncwarp();
    }
    for (int offset = 16; offset > 0; offset >>= 1) scanned += __shfl_xor_sync(FULL_MASK, scanned, offset);
    if (lane == 0) costs[i] = (leaf_start[leaf + 1] - leaf_start[leaf]) * (scanned + 1);
}

// ---------------------------------------------------------------------------------------------------------
// leaf blocks: the warp's 32 queries (tree positions qs ..) against the 32 points of a leaf from s, all pairs at
// once as a register tile. Lane l takes queries 4(l/4) .. +3 against points 8(l%4) .. +7, so each coordinate
// loaded serves 4 or 8 distances. Rows and columns past a leaf read the next leaf's points (the GPU tree's coords
// carry 32 floats of slack after the last row for the last leaf): callers leave them out. Every lane must call
// these (they shuffle within groups of 4).

__device__ __forceinline__ void leaf_block_dim(const float* __restrict__ q, const float* __restrict__ p, float (&qv)[4],
                                               float (&pv)[8], float (&sq)[4][8]) {
    for (int a = 0; a < 4; ++a) qv[a] = q[a];
    for (int b = 0; b < 8; ++b) pv[b] = p[b];
    for (int a = 0; a < 4; ++a)
        for (int b = 0; b < 8; ++b) {
            const float diff = pv[b] - qv[a];  // point minus query, summed in dimension order: the float32 rule
            sq[a][b] = diff * diff;
        }
}

__device__ __forceinline__ void leaf_block_sq(const float* __restrict__ coords, i64 n, int d, i64 qs, i64 s, int lane,
                                              float (&acc)[4][8]) {
    const float* q = coords + qs + 4 * (lane >> 2);
    const float* p = coords + s + 8 * (lane & 3);
    float qv[4], pv[8], sq[4][8];
    leaf_block_dim(q, p, qv, pv, acc);  // the first dimension starts the sums (0 + x is x)
    for (int c = 1; c < d; ++c) {
        q += n;
        p += n;
        leaf_block_dim(q, p, qv, pv, sq);
        for (int a = 0; a < 4; ++a)
            for (int b = 0; b < 8; ++b) acc[a][b] += sq[a][b];
    }
}

// element `part` of a 4-element register array, without local memory
template <typename T>
__device__ __forceinline__ T pick(const T (&values)[4], int part) {
    return part == 0 ? values[0] : part == 1 ? values[1] : part == 2 ? values[2] : values[3];
}

// A tile's columns are counted too when a walk counts each pair once (see pair_counts): lane (g, t) sums its 4
// rows into 8 byte-sized column counters (at most 4 each), and this adds them up over the 8 groups g and gives
// lane (g, t) the total of its counter g: at most 32, so bytes never carry.
__device__ __forceinline__ int column_total(unsigned low, unsigned high, int lane) {
    for (int mask = 4; mask <= 16; mask <<= 1) {
        low += __shfl_xor_sync(FULL_MASK, low, mask);
        high += __shfl_xor_sync(FULL_MASK, high, mask);
    }
    const int g = lane >> 2;
    return ((g < 4 ? low : high) >> (8 * (g & 3))) & 0xff;
}

// adds one row's hits (bit b: column b) to the byte counters of columns 0-3 (low) and 4-7 (high); x * 0x204081
// copies bit i of a 4-bit x to bits i + 7j (j < 4) without carries, and the mask keeps bit 8i
__device__ __forceinline__ void add_columns(unsigned within, unsigned& low, unsigned& high) {
    low += ((within & 0xfu) * 0x204081u) & 0x01010101u;
    high += ((within >> 4) * 0x204081u) & 0x01010101u;
}

// the leaf point whose column total a lane holds after leaf_block_hits (counter g of lane (g, t) is point 8 t + g)
__device__ __forceinline__ int block_column(int lane) { return 8 * (lane & 3) + (lane >> 2); }

// points of the leaf [s, e) within reach of lane l's own query (query 4 * group + part = l); `column` gets the number
// of `wanted` queries within reach of point block_column(l)
__device__ __forceinline__ int leaf_block_hits(const float* __restrict__ coords, i64 n, int d, i64 qs, i64 s, i64 e,
                                               int lane, float reach2, unsigned wanted, int& column) {
    float acc[4][8];
    leaf_block_sq(coords, n, d, qs, s, lane, acc);
    const int group = lane >> 2, part = lane & 3;
    const int size = (int)(e - s);
    float limit[8];  // squared distances are never below 0, so points past the leaf never count
    for (int b = 0; b < 8; ++b) limit[b] = 8 * part + b < size ? reach2 : 0.0f;
    int hits[4];
    unsigned low = 0u, high = 0u;
    for (int a = 0; a < 4; ++a) {
        unsigned within = 0u;  // bit b: point 8 part + b within reach of query 4 group + a
        for (int b = 0; b < 8; ++b)
            if (acc[a][b] < limit[b]) within |= 1u << b;
        hits[a] = __popc(within);
        if ((wanted >> (4 * group + a)) & 1u) add_columns(within, low, high);
        hits[a] += __shfl_xor_sync(FULL_MASK, hits[a], 1);  // the 4 lanes of a group hold 8 points each
        hits[a] += __shfl_xor_sync(FULL_MASK, hits[a], 2);
    }
    column = column_total(low, high, lane);
    return pick(hits, part);
}

// a candidate for delta/parent as one 64-bit key, squared distance bits over original id: non-negative floats order
// as their bits, so the smallest key is the nearest point, ties going to the smaller id (ids are below 2^31)
typedef unsigned long long Key;
#define NO_KEY 0x7f800000ffffffffULL  // +inf, past every id: nothing found yet
__device__ __forceinline__ Key nearest_key(float d2, i64 id) { return ((Key)__float_as_uint(d2) << 32) | (Key)id; }
__device__ __forceinline__ float key_d2(Key key) { return __uint_as_float((unsigned)(key >> 32)); }
__device__ __forceinline__ i64 key_id(Key key) { return (i64)(key & 0xffffffffu); }

// the smallest of the keys held by the 4 lanes of a group, in all 4
__device__ __forceinline__ Key group_nearest(Key key) {
    for (int mask = 1; mask <= 2; mask <<= 1) key = min(key, __shfl_xor_sync(FULL_MASK, key, mask));
    return key;
}

// the nearest point of the leaf denser than lane l's own query, merged into `best`; query_rank holds the ranks of the
// lane's 4 tile queries (0 past the query leaf: such rows want nothing)
__device__ __forceinline__ void leaf_block_nearest(const float* __restrict__ coords, i64 n, int d, i64 qs, i64 s,
                                                   i64 e, int lane, const i64* __restrict__ ids,
                                                   const int* __restrict__ rank, const int (&query_rank)[4], Key& best) {
    float acc[4][8];
    leaf_block_sq(coords, n, d, qs, s, lane, acc);
    const int part = lane & 3;
    int point_rank[8];
    i64 point_id[8];
    for (int b = 0; b < 8; ++b) {
        const i64 t = s + 8 * part + b;
        point_rank[b] = t < e ? rank[t] : 0x7fffffff;  // past the leaf: denser than nothing
        point_id[b] = t < e ? ids[t] : 0;
    }
    Key found[4];
    for (int a = 0; a < 4; ++a) {
        found[a] = NO_KEY;
        for (int b = 0; b < 8; ++b)
            if (point_rank[b] < query_rank[a]) found[a] = min(found[a], nearest_key(acc[a][b], point_id[b]));
        found[a] = group_nearest(found[a]);
    }
    best = min(best, pick(found, part));
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

// points of the leaf within reach of lane l's own query, and in `column` the number of `wanted` queries within reach
// of point tile_col(g, t) of lane (g, t), as leaf_block_hits; rows not in `wanted` may come back short
__device__ __forceinline__ int tile_hits(const float* __restrict__ coords, i64 n, int d, const QueryRows& rows,
                                         i64 s, i64 e, int lane, float reach2, unsigned wanted, int& column) {
    float approx[4][8];
    const float err = tile_sq(coords, n, d, rows, s, e, lane, approx);
    const float surely_in = __fsub_rd(reach2, err), surely_out = __fadd_ru(reach2, err);
    const int t = lane & 3;
    int hits[4];
    unsigned low = 0u, high = 0u;
    for (int a = 0; a < 4; ++a) {
        const bool row_wanted = (wanted >> ((lane >> 2) + 8 * a)) & 1u;
        unsigned within = 0u, unsure = 0u;  // bit b: point tile_col(b, t) of row g + 8a
        for (int b = 0; b < 8; ++b) {
            const bool real = s + tile_col(b, t) < e;
            const bool in = approx[a][b] < surely_in, out = approx[a][b] >= surely_out;  // NaN: neither
            if (real && in) within |= 1u << b;
            if (real && !in && !out) unsure |= 1u << b;
        }
        if (!row_wanted) unsure = 0u;
        for (; unsure; unsure &= unsure - 1) {  // too near the reach: the rule decides
            const int b = __ffs(unsure) - 1;
            if (sq_between(coords, n, d, s + tile_col(b, t), rows.first + 8 * a) < reach2) within |= 1u << b;
        }
        hits[a] = __popc(within);
        if (row_wanted) add_columns(within, low, high);
        hits[a] += __shfl_xor_sync(FULL_MASK, hits[a], 1);
        hits[a] += __shfl_xor_sync(FULL_MASK, hits[a], 2);
    }
    column = column_total(low, high, lane);
    return row_to_owner(hits, lane);
}

// the nearest denser point of the leaf for every row, merged into the group-replicated row_best. A point is
// recomputed with the float32 rule only when its lower bound does not exceed the row's best so far or the smallest
// upper bound the tile offers: usually the one point that improves the row, if any.
__device__ __forceinline__ bool tile_nearest(const float* __restrict__ coords, i64 n, int d, const QueryRows& rows,
                                             i64 s, i64 e, int lane, const i64* __restrict__ ids,
                                             const int* __restrict__ rank, const int (&row_rank)[4],
                                             Key (&row_best)[4]) {
    float approx[4][8];
    const float err = tile_sq(coords, n, d, rows, s, e, lane, approx);
    const int t = lane & 3;
    int point_rank[8];
    for (int b = 0; b < 8; ++b) point_rank[b] = s + tile_col(b, t) < e ? rank[s + tile_col(b, t)] : 0x7fffffff;
    unsigned maybe = 0u;
    for (int a = 0; a < 4; ++a) {
        float limit = key_d2(row_best[a]);
        for (int b = 0; b < 8; ++b)
            if (point_rank[b] < row_rank[a]) limit = fminf(limit, __fadd_ru(approx[a][b], err));
        limit = fminf(limit, __shfl_xor_sync(FULL_MASK, limit, 1));
        limit = fminf(limit, __shfl_xor_sync(FULL_MASK, limit, 2));
        for (int b = 0; b < 8; ++b)
            if (point_rank[b] < row_rank[a] && !(__fsub_rd(approx[a][b], err) > limit)) maybe |= 1u << (8 * a + b);
    }
    if (!__any_sync(FULL_MASK, maybe)) return false;
    for (int a = 0; a < 4; ++a) {
        Key found = row_best[a];
        for (unsigned row = (maybe >> (8 * a)) & 0xffu; row; row &= row - 1) {
            const i64 point = s + tile_col(__ffs(row) - 1, t);
            found = min(found, nearest_key(sq_between(coords, n, d, point, rows.first + 8 * a), ids[point]));
        }
        row_best[a] = group_nearest(found);
    }
    return true;
}

// ---------------------------------------------------------------------------------------------------------
// rho: one warp per leaf of queries (tree order, so a warp's queries are neighbours) walks the tree once. Each
// stack entry carries the lanes still undecided about that node: every such lane tests the node's ball for its
// own query, drops it when outside the reach, counts it at once when inside (cut-off rho), and the warp descends
// only while some lane is undecided.

// Register caps (measured on an H100): the scalar-tile kernels run faster as four blocks per SM (64 registers;
// delta spills a few) than as two or three; the tensor-tile kernels keep two (128 registers instead of about 140).
#define LEAF_KERNEL_BOUNDS __launch_bounds__(256, TENSOR ? 2 : 4)

// Cut-off rho counts each unordered pair once: the warp of leaf A walks only the nodes after A in tree order
// (those before it counted their pairs with A themselves) and the nodes holding A, and every decision serves
// both sides. A lane that finds a node inside its reach counts the node's points and adds itself to the node's
// tally, which each of the node's points takes at the end (add_node_tallies); a leaf tile gives the undecided lanes
// their rows and the leaf's points their columns. The pair counts are the same as every point counting all of
// its own pairs: the distance rule is symmetric (p - q and q - p round to the same magnitude).
// Over the leaves [first_leaf, last_leaf) only (a Dask worker's run) it counts the pairs with a point there and the
// other in the same leaf or after it: that run's part of every point's count, later runs' points included (which
// whoever gathers the runs adds up; counting the pairs across a run's start again, for the run's own points, took
// 15% more work at the 2% rule).
template <bool TENSOR>
__global__ void LEAF_KERNEL_BOUNDS
    pair_counts(const float* __restrict__ coords, i64 n, int d, int depth, const i64* __restrict__ leaf_start, const float* __restrict__ center,
                const float* __restrict__ radius, float reach2, double reach_lo, double reach_hi, double slack,
                unsigned* __restrict__ count, unsigned* __restrict__ node_count, i64 first_leaf, i64 last_leaf) {
    LeafWarp w;
    if (!leaf_warp(leaf_start, depth, w, first_leaf, last_leaf)) return;
    const int lane = w.lane;
    // float bounds (every lane tests every node it reaches), so the reach is rounded outwards too
    const float reach_lo_f = __double2float_rd(reach_lo), reach_hi_f = __double2float_ru(reach_hi);
    const float slack_f = float_slack(slack);
    float self[SELF_DIMS];
    if (!TENSOR) own_coords(coords, n, d, w.pq, self);
    QueryRows rows;
    if (TENSOR) rows = query_rows(coords, n, d, w.qs, w.qe, center + w.own * d, lane);
    int total = 0;

    Visit stack[STACK];
    stack[0] = {0, 0, (int)n, __ballot_sync(FULL_MASK, w.active)};
    int top = 1;
    while (top > 0) {
        const Visit v = stack[--top];
        const int mid = child_split(leaf_start, depth, v.node);
        if (v.end <= w.qs) continue;  // before the own leaf
        const bool after = v.start >= w.qe;  // else the node holds the own leaf: split it untested
        const int level = node_level(v.node);
        unsigned undecided = v.lanes;
        if (after && (!TENSOR || level < depth)) {  // with tensor tiles a leaf is scanned untested: in high d its
                                                   // test rarely decides anything and costs a good part of a tile
            const bool mine = (v.lanes >> lane) & 1u;
            const BoundsF b = ball_bounds_f(sq_to_centre<TENSOR>(self, coords, n, d, w.pq, center + (i64)v.node * d),
                                            radius[v.node], slack_f);
            const bool inside = mine && b.upper < reach_lo_f;
            if (inside) total += v.end - v.start;
            const unsigned inside_lanes = __ballot_sync(FULL_MASK, inside);
            if (inside_lanes && lane == 0) atomicAdd(node_count + v.node, (unsigned)__popc(inside_lanes));
            undecided = __ballot_sync(FULL_MASK, mine && !inside && !(b.lower >= reach_hi_f));
            if (!undecided) continue;
        }
        if (level < depth) {
            push_children(stack, top, v, mid, undecided, NO_POSITION);
            continue;
        }
        int column;  // the own leaf's columns are its own rows: only an after leaf takes them
        const int hits = TENSOR ? tile_hits(coords, n, d, rows, v.start, v.end, lane, reach2, undecided, column)
                                : leaf_block_hits(coords, n, d, w.qs, v.start, v.end, lane, reach2, undecided, column);
        if ((undecided >> lane) & 1u) total += hits;
        if (after && column > 0)
            atomicAdd(count + v.start + (TENSOR ? tile_col(lane >> 2, lane & 3) : block_column(lane)), (unsigned)column);
    }
    if (w.active) atomicAdd(count + w.p, (unsigned)total);
}

// a point's own count plus the tallies of every node holding it (pair_counts' and update.cu's count_near's)
extern "C" __global__ void add_node_tallies(const i64* __restrict__ leaf_start, int depth,
                                            const unsigned* __restrict__ count, const unsigned* __restrict__ node_count,
                                            double* __restrict__ out) {
    LeafWarp w;
    if (!leaf_warp(leaf_start, depth, w)) return;
    unsigned total = w.active ? count[w.p] : 0u;
    for (i64 k = w.own; k > 0; k = (k - 1) >> 1) total += node_count[k];
    total += node_count[0];
    if (w.active) out[w.p] = (double)total;
}

// Gaussian rho sums exp(-d^2 / dc^2) over every pair within reach, so it needs each pair's distance and decides
// no node as inside; every point sums its own pairs, each term rounded to whole units of 2^-32 (GAUSSIAN_UNIT in
// vptree.py), which add up exactly in any order, as on the CPU. With `slot` (update.py's rho_at)
// only the positions p with slot[p] >= 0 are queries, and rho[slot[p]] gets theirs; without it (nullptr) all are.
extern "C" __global__ void gaussian_rho(const float* __restrict__ coords, i64 n, int d, int depth,
                                        const i64* __restrict__ leaf_start, const float* __restrict__ center,
                                        const float* __restrict__ radius, float reach2, double reach_hi,
                                        double inv_dc2, double slack, const int* __restrict__ slot,
                                        double* __restrict__ rho, i64 first_leaf, i64 last_leaf) {
    LeafWarp w;
    if (!leaf_warp(leaf_start, depth, w, first_leaf, last_leaf)) return;
    if (slot != nullptr) w.active = w.active && slot[w.p] >= 0;
    const int lane = w.lane;
    const float reach_hi_f = __double2float_ru(reach_hi), slack_f = float_slack(slack);
    float self[SELF_DIMS];
    own_coords(coords, n, d, w.pq, self);
    long long units = 0;

    Visit stack[STACK];
    stack[0] = {0, 0, (int)n, __ballot_sync(FULL_MASK, w.active)};
    int top = 1;
    while (top > 0) {
        const Visit v = stack[--top];
        const int mid = child_split(leaf_start, depth, v.node);
        const bool mine = (v.lanes >> lane) & 1u;
        const float lower = ball_bounds_f(sq_to_centre<false>(self, coords, n, d, w.pq, center + (i64)v.node * d),
                                          radius[v.node], slack_f).lower;
        const bool near = mine && !(lower >= reach_hi_f);
        const unsigned undecided = __ballot_sync(FULL_MASK, near);
        if (!undecided) continue;
        if (node_level(v.node) < depth) {
            push_children(stack, top, v, mid, undecided, NO_POSITION);
            continue;
        }
        if (near)
            for (i64 t = v.start; t < v.end; ++t) {
                const float d2 = sq_between(coords, n, d, t, w.p);
                if (d2 < reach2 && t != w.p) units += gaussian_units(d2, inv_dc2);
            }
    }
    if (w.active) rho[slot != nullptr ? slot[w.p] : w.p] = (double)units * GAUSSIAN_STEP;
}

// ---------------------------------------------------------------------------------------------------------
// delta/parent: one warp per leaf of queries walks the tree, down to its own leaf first so that every lane's best
// shrinks early. A node is dropped for a lane when it holds nothing denser (smallest density
// rank), or its ball lies beyond the lane's best distance, or at it with only larger ids (smallest id). Leaves
// are searched as register tiles (tensor-core tiles when TENSOR); a lane takes any denser point a leaf offers even
// when it did not need that leaf, which is always right (delta is a minimum over all denser points). Ties go to the
// smaller id.

template <bool TENSOR>
__global__ void LEAF_KERNEL_BOUNDS
    delta_leaves(const float* __restrict__ coords, i64 n, int d, int depth, const i64* __restrict__ leaf_start, const i64* __restrict__ ids,
                 const int* __restrict__ rank, const float* __restrict__ center, const float* __restrict__ radius,
                 const int* __restrict__ min_rank, const unsigned* __restrict__ min_id, double slack,
                 float* __restrict__ delta2, i64* __restrict__ parent, i64 first_leaf, i64 last_leaf) {
    LeafWarp w;
    if (!leaf_warp(leaf_start, depth, w, first_leaf, last_leaf)) return;
    const int lane = w.lane, group = lane >> 2;
    const i64 own = w.own, qs = w.qs, qe = w.qe;
    const int my_rank = w.active ? rank[w.p] : 0;  // rank 0 (the densest, or an idle lane) wants nothing
    const float slack_f = float_slack(slack);
    float self[SELF_DIMS];
    if (!TENSOR) own_coords(coords, n, d, w.pq, self);
    int query_rank[4];  // the ranks of the lane's scalar-tile queries
    if (!TENSOR)
        for (int a = 0; a < 4; ++a) query_rank[a] = qs + 4 * group + a < qe ? rank[qs + 4 * group + a] : 0;
    Key best_key = NO_KEY;
    float best = key_d2(best_key);  // its distance, rounded up against the bounds rounded down: a skip is always safe
    // tensor tiles keep every row's best in the row's 4 lanes; the lane's own query's best follows it
    QueryRows rows;
    int row_rank[4];
    Key row_best[4];
    if (TENSOR) {
        rows = query_rows(coords, n, d, qs, qe, center + own * d, lane);
        for (int a = 0; a < 4; ++a) {
            const i64 q = qs + group + 8 * a;
            row_rank[a] = q < qe ? rank[q] : 0;  // rows past the leaf want nothing
            row_best[a] = NO_KEY;
        }
    }

    // each stack entry carries the lanes that may still find something in that node
    Visit stack[STACK];
    stack[0] = {0, 0, (int)n, __ballot_sync(FULL_MASK, my_rank > 0)};
    int top = 1;
    while (top > 0) {
        const Visit v = stack[--top];
        const int mid = child_split(leaf_start, depth, v.node);
        const int level = node_level(v.node);
        bool relevant = ((v.lanes >> lane) & 1u) && min_rank[v.node] < my_rank;
        if (!TENSOR || level < depth) {  // with tensor tiles a leaf is scanned without its ball test, as in rho
            const float lower = ball_bounds_f(sq_to_centre<TENSOR>(self, coords, n, d, w.pq, center + (i64)v.node * d),
                                              radius[v.node], slack_f).lower;
            relevant = relevant && !(lower > best || (lower >= best && (i64)min_id[v.node] > key_id(best_key)));
        }
        const unsigned still = __ballot_sync(FULL_MASK, relevant);
        if (!still) continue;
        if (level == depth) {
            if (!TENSOR) leaf_block_nearest(coords, n, d, qs, v.start, v.end, lane, ids, rank, query_rank, best_key);
            else if (tile_nearest(coords, n, d, rows, v.start, v.end, lane, ids, rank, row_rank, row_best))
                best_key = row_to_owner(row_best, lane);
            best = __fsqrt_ru(key_d2(best_key));
            continue;
        }
        // the child holding the query leaf goes on top, elsewhere the left one. Ordering every node's children by
        // distance to the query leaf was measured slower (2M x 4: 45 ms against 26): it costs more than it prunes.
        push_children(stack, top, v, mid, still, qs);
    }
    if (w.active && my_rank > 0) {
        delta2[w.p] = key_d2(best_key);
        parent[w.p] = key_id(best_key);
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

extern "C" __global__ void border_rho(const float* __restrict__ coords, i64 n, int d, int depth, const i64* __restrict__ leaf_start,
                                      const int* __restrict__ labels, const double* __restrict__ rho,
                                      const float* __restrict__ center, const float* __restrict__ radius,
                                      const int* __restrict__ node_label, const double* __restrict__ node_max_rho,
                                      float dc2, double dc_lo, double dc_hi, double slack,
                                      double* __restrict__ pair_rho) {
    LeafWarp w;
    if (!leaf_warp(leaf_start, depth, w)) return;
    const i64 own = w.own, p = w.p, pq = w.pq;
    const bool active = w.active;
    const int my_label = labels[pq];
    const double own_pad = (double)radius[own] * (1.0 + slack);
    double best = -1.0 / 0.0;

    Visit stack[STACK];
    stack[0] = {0, 0, (int)n, 0u};  // every lane walks every node: no lane masks
    int top = 1;
    while (top > 0) {
        const Visit v = stack[--top];
        const int mid = child_split(leaf_start, depth, v.node);
        const i64 k = v.node;
        const bool useful = active && node_label[k] != my_label && node_max_rho[k] > best;
        if (!__any_sync(FULL_MASK, useful)) continue;
        Bounds b = ball_bounds(sq_rows(center + own * d, center + k * d, d), radius[k], slack);
        if (b.lower - own_pad >= dc_hi) continue;
        if (node_level(v.node) < depth) {
            push_children(stack, top, v, mid, 0u, NO_POSITION);
            continue;
        }
        if (!useful) continue;
        Bounds mine = ball_bounds(sq_to_row(coords, n, d, p, center + k * d), radius[k], slack);
        if (mine.lower >= dc_hi) continue;
        if (mine.upper < dc_lo && node_label[k] >= 0) { best = node_max_rho[k]; continue; }
        for (i64 t = v.start; t < v.end; ++t)
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
