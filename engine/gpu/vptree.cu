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
// rho: one warp per leaf of queries (tree order, so a warp's queries are neighbours) walks the tree once.
// Each stack entry carries the lanes still undecided about that node: every such lane tests the node's ball
// for its own query, counts the node at once when it lies inside the reach, drops it when outside, and the
// warp descends only while some lane is undecided. At a leaf the undecided lanes are served by the whole warp:
// lane l holds point l of the leaf and a ballot counts one query's hits.

template <bool GAUSSIAN>
__device__ void rho_leaves(const float* __restrict__ coords, i64 n, int d, int depth,
                           const float* __restrict__ center, const float* __restrict__ radius,
                           float reach2, double reach_lo, double reach_hi, double inv_dc2, double slack,
                           double* __restrict__ rho) {
    LeafWarp w;
    if (!leaf_warp(n, depth, w)) return;
    const int lane = w.lane;
    const i64 qs = w.qs, p = w.p, pq = w.pq;
    const bool active = w.active;
    double total = 0.0;

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
        Bounds mine = ball_bounds(sq_to_row(coords, n, d, pq, center + k * d), radius[k], slack);
        const bool outside = mine.lower >= reach_hi;
        const bool inside = !GAUSSIAN && mine.upper < reach_lo;
        if (mine_to_decide && inside) total += (double)(e - s);
        unsigned undecided = __ballot_sync(FULL_MASK, mine_to_decide && !outside && !inside);
        if (!undecided) continue;
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
            const bool has_point = s + lane < e;
            while (undecided) {
                const int i = __ffs(undecided) - 1;
                undecided &= undecided - 1;
                const float d2 = has_point ? sq_between(coords, n, d, s + lane, qs + i) : reach2;
                const unsigned hits = __ballot_sync(FULL_MASK, d2 < reach2);
                if (lane == i) total += (double)__popc(hits);
            }
        }
    }
    if (active) rho[p] = GAUSSIAN ? total : total - 1.0;  // a cut-off count includes the point itself
}

extern "C" __global__ void rho_cutoff(const float* coords, i64 n, int d, int depth, const float* center,
                                      const float* radius, float reach2, double reach_lo, double reach_hi,
                                      double inv_dc2, double slack, double* rho) {
    rho_leaves<false>(coords, n, d, depth, center, radius, reach2, reach_lo, reach_hi, inv_dc2, slack, rho);
}

extern "C" __global__ void rho_gaussian(const float* coords, i64 n, int d, int depth, const float* center,
                                        const float* radius, float reach2, double reach_lo, double reach_hi,
                                        double inv_dc2, double slack, double* rho) {
    rho_leaves<true>(coords, n, d, depth, center, radius, reach2, reach_lo, reach_hi, inv_dc2, slack, rho);
}

// ---------------------------------------------------------------------------------------------------------
// delta/parent. Pass 1 (GDPC's covered leaves): one warp per leaf searches, for each query, the nearest denser
// point closer than dc, nearer nodes first, under the warp's largest current best distance. Pass 2: the few
// points with nothing denser within dc (the densest of their neighbourhood) search the whole tree, one thread
// each. Both skip nodes with nothing denser (smallest density rank) and break distance ties by smaller id.

__device__ __forceinline__ void consider(float d2, i64 id, float& best_d2, i64& best_id) {
    if (d2 < best_d2 || (d2 == best_d2 && id < best_id)) { best_d2 = d2; best_id = id; }
}

extern "C" __global__ void delta_local(const float* __restrict__ coords, i64 n, int d, int depth,
                                       const i64* __restrict__ ids, const int* __restrict__ rank,
                                       const float* __restrict__ center, const float* __restrict__ radius,
                                       const int* __restrict__ min_rank, float reach2, double slack,
                                       float* __restrict__ delta2, i64* __restrict__ parent) {
    LeafWarp w;
    if (!leaf_warp(n, depth, w)) return;
    const int lane = w.lane;
    const i64 own = w.own, qs = w.qs, qe = w.qe, p = w.p, pq = w.pq;
    const int my_rank = w.active ? rank[p] : 0;  // rank 0 (the densest, or an idle lane) wants nothing

    // start from the query's own leaf; -1 marks "nothing closer than the reach yet" and loses every tie
    float best_d2 = reach2;
    i64 best_id = -1;
    for (i64 t = qs; t < qe && my_rank > 0; ++t)
        if (rank[t] < my_rank) {
            float d2 = sq_between(coords, n, d, t, p);
            if (d2 < best_d2 || (d2 == best_d2 && best_id >= 0 && ids[t] < best_id)) { best_d2 = d2; best_id = ids[t]; }
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
        const bool mine = (masks[top] >> lane) & 1u;
        Bounds b = ball_bounds(sq_to_row(coords, n, d, pq, center + k * d), radius[k], slack);
        const bool relevant = mine && k != own && min_rank[k] < my_rank && b.lower <= sqrt((double)best_d2);
        const unsigned still = __ballot_sync(FULL_MASK, relevant);
        if (!still) continue;
        if (level == depth) {
            if (relevant) {
                const i64 j = k - ((1LL << level) - 1);
                for (i64 t = seg_start(n, level, j), e = seg_start(n, level, j + 1); t < e; ++t)
                    if (rank[t] < my_rank) {
                        float d2 = sq_between(coords, n, d, t, p);
                        if (d2 < best_d2 || (d2 == best_d2 && best_id >= 0 && ids[t] < best_id)) { best_d2 = d2; best_id = ids[t]; }
                    }
            }
            continue;
        }
        // the child nearer to the warp's own leaf is searched first, to shrink every lane's best early
        i64 near = 2 * k + 1, far = 2 * k + 2;
        if (sq_rows(center + own * d, center + far * d, d) < sq_rows(center + own * d, center + near * d, d)) { near = 2 * k + 2; far = 2 * k + 1; }
        nodes[top] = far; masks[top] = still;
        nodes[top + 1] = near; masks[top + 1] = still;
        top += 2;
    }
    if (my_rank > 0) {
        delta2[p] = best_d2;
        parent[p] = best_id;  // -1: none within the reach, left to delta_global
    }
}

extern "C" __global__ void delta_global(const float* __restrict__ coords, i64 n, int d, int depth,
                                        const i64* __restrict__ ids, const int* __restrict__ rank,
                                        const float* __restrict__ center, const float* __restrict__ radius,
                                        const int* __restrict__ min_rank, const unsigned* __restrict__ min_id,
                                        double slack, const i64* __restrict__ queries, i64 n_queries,
                                        float* __restrict__ delta2, i64* __restrict__ parent) {
    const i64 qi = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (qi >= n_queries) return;
    const i64 p = queries[qi];
    const int my_rank = rank[p];
    float best_d2 = __int_as_float(0x7f800000);  // +inf
    i64 best_id = 0x7fffffffffffffffLL;
    i64 nodes[STACK];
    int levels[STACK];
    double lowers[STACK];
    int top = 1;
    nodes[0] = 0; levels[0] = 0; lowers[0] = 0.0;
    while (top > 0) {
        --top;
        const i64 k = nodes[top];
        const int level = levels[top];
        const double best = sqrt((double)best_d2), lower = lowers[top];
        if (min_rank[k] >= my_rank || lower > best || (lower >= best && (i64)min_id[k] > best_id)) continue;
        const i64 j = k - ((1LL << level) - 1);
        if (level == depth) {
            for (i64 t = seg_start(n, level, j), e = seg_start(n, level, j + 1); t < e; ++t)
                if (rank[t] < my_rank) consider(sq_between(coords, n, d, t, p), ids[t], best_d2, best_id);
            continue;
        }
        i64 near = 2 * k + 1, far = 2 * k + 2;
        double near_lower = ball_bounds(sq_to_row(coords, n, d, p, center + near * d), radius[near], slack).lower;
        double far_lower = ball_bounds(sq_to_row(coords, n, d, p, center + far * d), radius[far], slack).lower;
        if (far_lower < near_lower) { i64 tk = near; near = far; far = tk; double tl = near_lower; near_lower = far_lower; far_lower = tl; }
        nodes[top] = far; levels[top] = level + 1; lowers[top] = far_lower;
        nodes[top + 1] = near; levels[top + 1] = level + 1; lowers[top + 1] = near_lower;
        top += 2;
    }
    delta2[p] = best_d2;
    parent[p] = best_id;
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
