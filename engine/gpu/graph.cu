// dpstudio GPU kernels for the DBSCAN family: the k nearest neighbours of every point, the mutual-reachability
// minimum spanning tree by Borůvka over the VP-tree, and DBSCAN labels at one eps from the cached arrays.
//
// This source is compiled appended to vptree.cu (graph.py joins the two), whose layout, walks and helpers it uses:
// LeafWarp, Visit, push_children, ball_bounds_f, own_coords, sq_to_centre, Key. Compiled with --fmad=false, so
// every squared distance is the float32 rule, bit-identical to the CPU backend.

// squared distance from tree position t to the lane's query p (point minus query, dimensions in order), the
// query's first coordinates taken from `self`
__device__ __forceinline__ float sq_to_query(const float (&self)[SELF_DIMS], const float* __restrict__ coords, i64 n,
                                            int d, i64 p, i64 t) {
    float acc = 0.0f;
#pragma unroll
    for (int c = 0; c < SELF_DIMS; ++c)
        if (c < d) {
            const float diff = coords[c * n + t] - self[c];
            acc += diff * diff;
        }
    for (int c = SELF_DIMS; c < d; ++c) {
        const float diff = coords[c * n + t] - coords[c * n + p];
        acc += diff * diff;
    }
    return acc;
}

__device__ __forceinline__ Key load_fresh(const Key* p) { return *(const volatile Key*)p; }

// ---------------------------------------------------------------------------------------------------------
// Leaf scans in high d (TENSOR): the warp's 32 queries against a leaf as a 3xTF32 tensor-core tile (tile_sq of
// vptree.cu), whose approximate squared distances come with a bound `err` on their distance from the float32 rule.
// The tile is staged through shared memory so that each lane reads its own query's row; a point is recomputed by the
// rule only when its lower bound (approximation - err) does not exclude it, so results stay bit-identical.

#define STAGE_PITCH 33  // a row of 32 columns plus one: the lanes reading their own rows hit distinct banks

// lane l gets row l of the tile (its own query against the leaf's points) in rows[l][0 .. 32); every lane must call it
__device__ __forceinline__ float stage_tile(const float* __restrict__ coords, i64 n, int d, const QueryRows& query,
                                            i64 s, i64 e, int lane, float (*rows)[STAGE_PITCH]) {
    float approx[4][8];
    const float err = tile_sq(coords, n, d, query, s, e, lane, approx);
    __syncwarp();  // the previous leaf's rows have been read
    for (int a = 0; a < 4; ++a)
        for (int b = 0; b < 8; ++b) rows[(lane >> 2) + 8 * a][tile_col(b, lane & 3)] = approx[a][b];
    __syncwarp();
    return err;
}

// ---------------------------------------------------------------------------------------------------------
// k nearest neighbours: one warp per leaf of queries walks the tree (down to its own leaf first), each lane keeping
// its query's k best as keys (squared-distance bits over original id, so ties go to the smaller id) in registers,
// worst first: list[0] is the k-th best, the bound every node is tested against. A node is dropped for a lane when
// its ball lies beyond that bound, or at it with only larger ids (min_id). The lanes scan every leaf the warp
// visits: in low d one point at a time (all lanes read the same point: one broadcast load), in high d as a tensor
// tile (then, as in delta, a leaf is scanned without its own ball test: in high d it rarely decides anything).

// key < list[0]: drop list[0] and put key in its place among list[0 .. k), keeping them in decreasing order. Fully
// unrolled with static indices, so the list stays in registers.
template <int KMAX>
__device__ __forceinline__ void insert_nearest(Key (&list)[KMAX], int k, Key key) {
    bool placed = false;
#pragma unroll
    for (int j = 0; j < KMAX; ++j)
        if (j < k && !placed) {
            const Key next = j + 1 < k ? list[j + 1 < KMAX ? j + 1 : j] : 0ULL;
            if (next > key) {
                list[j] = next;
            } else {
                list[j] = key;
                placed = true;
            }
        }
}

// register caps: tensor tiles as in delta, two blocks per SM (128 registers); so do scalar lists of k > 16 (k = 32
// stays in registers, larger ones spill a little); a scalar list of k <= 16 fits three (80 registers, no spill)
template <int KMAX, bool TENSOR>
__global__ void __launch_bounds__(256, TENSOR || KMAX > 16 ? 2 : 3)
    knn_leaves(const float* __restrict__ coords, i64 n, int d, int depth, const i64* __restrict__ leaf_start, const i64* __restrict__ ids,
               const float* __restrict__ center, const float* __restrict__ radius, const unsigned* __restrict__ min_id,
               double slack, int k, i64* __restrict__ out_ids, float* __restrict__ out_sq) {
    __shared__ float staged[TENSOR ? 8 : 1][32][STAGE_PITCH];
    LeafWarp w;
    if (!leaf_warp(leaf_start, depth, w)) return;
    const int lane = w.lane;
    const float slack_f = float_slack(slack);
    float self[SELF_DIMS];
    if (!TENSOR) own_coords(coords, n, d, w.pq, self);
    QueryRows rows;
    if (TENSOR) rows = query_rows(coords, n, d, w.qs, w.qe, center + w.own * d, lane);
    Key list[KMAX];
#pragma unroll
    for (int j = 0; j < KMAX; ++j) list[j] = NO_KEY;
    float reach = key_d2(NO_KEY);  // the k-th best distance rounded up (against bounds rounded down): +inf at first

    Visit stack[STACK];
    stack[0] = {0, 0, (int)n, __ballot_sync(FULL_MASK, w.active)};
    int top = 1;
    while (top > 0) {
        const Visit v = stack[--top];
        const int mid = child_split(leaf_start, depth, v.node);
        const int level = node_level(v.node);
        bool wanted = (v.lanes >> lane) & 1u;
        if (wanted && (!TENSOR || level < depth)) {
            const float lower = ball_bounds_f(sq_to_centre<TENSOR>(self, coords, n, d, w.pq, center + (i64)v.node * d),
                                              radius[v.node], slack_f).lower;
            wanted = !(lower > reach || (lower >= reach && min_id[v.node] > (unsigned)key_id(list[0])));
        }
        const unsigned still = __ballot_sync(FULL_MASK, wanted);
        if (!still) continue;
        if (level < depth) {
            push_children(stack, top, v, mid, still, w.qs);
            continue;
        }
        if (TENSOR) {
            float (*own_rows)[STAGE_PITCH] = staged[threadIdx.x >> 5];
            const float err = stage_tile(coords, n, d, rows, v.start, v.end, lane, own_rows);
            if (w.active)
                for (i64 t = v.start; t < v.end; ++t) {
                    if (t == w.p || __fsub_rd(own_rows[lane][t - v.start], err) > key_d2(list[0])) continue;
                    const Key key = nearest_key(sq_between(coords, n, d, t, w.p), ids[t]);
                    if (key < list[0]) insert_nearest(list, k, key);
                }
        } else if (w.active) {
            for (i64 t = v.start; t < v.end; ++t) {
                if (t == w.p) continue;  // the query itself; its duplicates are other points
                const Key key = nearest_key(sq_to_query(self, coords, n, d, w.p, t), ids[t]);
                if (key < list[0]) insert_nearest(list, k, key);
            }
        }
        reach = __fsqrt_ru(key_d2(list[0]));
    }
    if (w.active) {
        const i64 row = ids[w.p] * (i64)k;
#pragma unroll
        for (int j = 0; j < KMAX; ++j)
            if (j < k) {  // list[j] is the (k - j)-th nearest; NO_KEY left over when fewer than k other points exist
                out_ids[row + k - 1 - j] = list[j] == NO_KEY ? -1 : key_id(list[j]);
                out_sq[row + k - 1 - j] = key_d2(list[j]);
            }
    }
}

// ---------------------------------------------------------------------------------------------------------
// Minimum spanning tree of mutual reachability, Borůvka over the VP-tree (ArborX's scheme). Components are labelled
// 0 .. m-1 each round (comp, tree order). An edge is ordered by the key (w2, u, v), u < v original ids: `high` holds
// the w2 bits over u (w2 >= 0, so its bits order as the floats), `low` holds v. Per round:
//   seed_leaves        every point of a leaf holding several components offers its best edge within the leaf, so
//                      that each such component starts with a real edge as its bound (comp_best: the smallest
//                      high found so far, by 64-bit atomicMin)
//   boruvka_nearest    every point finds its best edge to another component, dropping nodes wholly in its own
//                      component (node_comp) and nodes whose lower bound cannot beat its own best or its
//                      component's bound, then lowers the component's bound to its best
//   component_low      points whose best high equals their component's minimum give the smallest v
//   hook_components    each component's edge and the component it leads to
//   merge_components   each component hooks onto that one, except one of each pair that chose the same edge; the
//                      hooking one records the edge
//   jump_parents       pointer jumping to the roots; relabel: each point takes its root's new label
// With a strict total order on edges each component's minimum edge is an MST edge and the hooks form no cycle but
// those pairs, so the result is the unique MST under the key.

#define NO_EDGE 0x7f800000ffffffffULL  // +inf over an id past every id: above every real edge's high
#define NO_ID 0xffffffffu

__device__ __forceinline__ Key edge_high(float w2, unsigned u) { return ((Key)__float_as_uint(w2) << 32) | (Key)u; }

// true when no edge of the node can come before the bound (high, low): core_lo is a lower bound on the squared core
// distances of the edge (exact), ball_lo on its distance (rounded down), and (lu, lv) on its ids. low = NO_ID means
// that v is not known (a component's bound holds only the high part): the ids alone must then lose on u.
__device__ __forceinline__ bool cannot_beat(float core_lo, float ball_lo, unsigned lu, unsigned lv, Key high, unsigned low) {
    const float w2 = key_d2(high), dist = __fsqrt_ru(w2);
    if (core_lo > w2 || ball_lo > dist) return true;  // every edge of the node weighs more
    if (!(core_lo >= w2 || ball_lo >= dist)) return false;
    const unsigned u = (unsigned)high;  // every edge weighs at least as much: the ids decide
    return lu > u || (lu == u && low != NO_ID && lv >= low);
}

// the edge of weight w2 between original ids a and b, merged into the best so far (high, low)
__device__ __forceinline__ void take_edge(float w2, unsigned a, unsigned b, Key& high, unsigned& low) {
    const Key h = edge_high(w2, min(a, b));
    const unsigned l = max(a, b);
    if (h < high || (h == high && l < low)) {
        high = h;
        low = l;
    }
}

// the best edge from query a (core a_core, component mine) to a point of another component in the leaf [s, e),
// merged into (high, low); `limit` skips points whose core distances alone weigh more
__device__ __forceinline__ void scan_leaf_edges(const float (&self)[SELF_DIMS], const float* __restrict__ coords, i64 n,
                                                int d, i64 p, i64 s, i64 e, const i64* __restrict__ ids,
                                                const float* __restrict__ core, const int* __restrict__ comp,
                                                unsigned a, float a_core, int mine, float limit, Key& high, unsigned& low) {
    for (i64 t = s; t < e; ++t) {
        if (comp[t] == mine) continue;
        const float cores = fmaxf(a_core, core[t]);
        if (cores > limit) continue;
        take_edge(fmaxf(cores, sq_to_query(self, coords, n, d, p, t)), a, (unsigned)ids[t], high, low);
    }
}

extern "C" __global__ void __launch_bounds__(256)
    seed_leaves(const float* __restrict__ coords, i64 n, int d, int depth, const i64* __restrict__ leaf_start, const i64* __restrict__ ids,
                const float* __restrict__ core, const int* __restrict__ comp, const int* __restrict__ node_comp,
                Key* comp_best) {
    LeafWarp w;
    if (!leaf_warp(leaf_start, depth, w) || node_comp[w.own] >= 0 || !w.active) return;  // one component: nothing to offer
    float self[SELF_DIMS];
    own_coords(coords, n, d, w.p, self);
    const int mine = comp[w.p];
    Key high = NO_EDGE;
    unsigned low = NO_ID;
    scan_leaf_edges(self, coords, n, d, w.p, w.qs, w.qe, ids, core, comp, (unsigned)ids[w.p], core[w.p], mine,
                    key_d2(NO_EDGE), high, low);
    if (high < NO_EDGE) atomicMin(comp_best + mine, high);
}

template <bool TENSOR>
__global__ void LEAF_KERNEL_BOUNDS
    boruvka_nearest(const float* __restrict__ coords, i64 n, int d, int depth, const i64* __restrict__ leaf_start, const i64* __restrict__ ids,
                    const float* __restrict__ core, const int* __restrict__ comp, const float* __restrict__ center,
                    const float* __restrict__ radius, const unsigned* __restrict__ min_id,
                    const float* __restrict__ node_core, const int* __restrict__ node_comp, double slack,
                    Key* comp_best, Key* __restrict__ best_high, unsigned* __restrict__ best_low) {
    __shared__ float staged[TENSOR ? 8 : 1][32][STAGE_PITCH];
    LeafWarp w;
    if (!leaf_warp(leaf_start, depth, w)) return;
    const int lane = w.lane;
    const float slack_f = float_slack(slack);
    float self[SELF_DIMS];
    if (!TENSOR) own_coords(coords, n, d, w.pq, self);
    QueryRows rows;
    if (TENSOR) rows = query_rows(coords, n, d, w.qs, w.qe, center + w.own * d, lane);
    const unsigned a = (unsigned)ids[w.pq];
    const int mine = comp[w.pq];
    const float a_core = core[w.pq];
    Key high = NO_EDGE;  // the lane's best edge so far
    unsigned low = NO_ID;
    Key shared = load_fresh(comp_best + mine);  // its component's bound: the high of a real edge of the component

    Visit stack[STACK];
    stack[0] = {0, 0, (int)n, __ballot_sync(FULL_MASK, w.active)};
    int top = 1;
    while (top > 0) {
        const Visit v = stack[--top];
        const int mid = child_split(leaf_start, depth, v.node);
        bool wanted = ((v.lanes >> lane) & 1u) && node_comp[v.node] != mine;
        if (wanted) {
            const float core_lo = fmaxf(a_core, node_core[v.node]);
            const float ball_lo = ball_bounds_f(sq_to_centre<TENSOR>(self, coords, n, d, w.pq, center + (i64)v.node * d),
                                                radius[v.node], slack_f).lower;
            // the node's edges pair a with ids >= min_id: none comes before (min(a, m), max(a, m))
            const unsigned m = min_id[v.node], lu = min(a, m), lv = max(a, m);
            wanted = !cannot_beat(core_lo, ball_lo, lu, lv, high, low) &&
                     !cannot_beat(core_lo, ball_lo, lu, lv, shared, NO_ID);
        }
        const unsigned still = __ballot_sync(FULL_MASK, wanted);
        if (!still) continue;
        if (node_level(v.node) < depth) {
            push_children(stack, top, v, mid, still, w.qs);
            continue;
        }
        const Key before = high;
        const float limit = key_d2(min(high, shared));  // a point whose edge surely weighs more is skipped
        if (TENSOR) {
            float (*own_rows)[STAGE_PITCH] = staged[threadIdx.x >> 5];
            const float err = stage_tile(coords, n, d, rows, v.start, v.end, lane, own_rows);
            if (w.active)
                for (i64 t = v.start; t < v.end; ++t) {
                    if (comp[t] == mine) continue;
                    const float cores = fmaxf(a_core, core[t]);
                    if (cores > limit || __fsub_rd(own_rows[lane][t - v.start], err) > limit) continue;
                    take_edge(fmaxf(cores, sq_between(coords, n, d, t, w.p)), a, (unsigned)ids[t], high, low);
                }
        } else if (w.active) {
            scan_leaf_edges(self, coords, n, d, w.p, v.start, v.end, ids, core, comp, a, a_core, mine, limit, high, low);
        }
        // share an improvement with the component; else pick up what its other points found meanwhile
        if (w.active) shared = high < before ? min(high, atomicMin(comp_best + mine, high)) : load_fresh(comp_best + mine);
    }
    if (w.active) {
        best_high[w.p] = high;
        best_low[w.p] = low;
    }
}

// the component's minimum edge: among its points whose best high is the component's, the smallest v
extern "C" __global__ void component_low(i64 n, const int* __restrict__ comp, const Key* __restrict__ best_high,
                                         const unsigned* __restrict__ best_low, const Key* __restrict__ comp_best,
                                         unsigned* __restrict__ comp_low) {
    const i64 t = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (t >= n) return;
    const int c = comp[t];
    if (best_high[t] == comp_best[c]) atomicMin(comp_low + c, best_low[t]);
}

// the component each component's minimum edge leads to (pos_of: tree position of each original id)
extern "C" __global__ void hook_components(int m, const Key* __restrict__ comp_best, const unsigned* __restrict__ comp_low,
                                           const i64* __restrict__ pos_of, const int* __restrict__ comp,
                                           int* __restrict__ target) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= m) return;
    const int cu = comp[pos_of[(unsigned)comp_best[c]]], cv = comp[pos_of[comp_low[c]]];
    target[c] = cu == c ? cv : cu;
}

// hook every component onto its target; of two components that chose each other (the same edge) the smaller
// stays a root. Each hook adds its edge to the tree at the next free slot (edge_count persists across rounds).
extern "C" __global__ void merge_components(int m, const int* __restrict__ target, const Key* __restrict__ comp_best,
                                            const unsigned* __restrict__ comp_low, int* __restrict__ parent,
                                            unsigned long long* edge_count, i64* __restrict__ out_u,
                                            i64* __restrict__ out_v, float* __restrict__ out_w2) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= m) return;
    const int o = target[c];
    if (target[o] == c && c < o) {
        parent[c] = c;
        return;
    }
    parent[c] = o;
    const unsigned long long slot = atomicAdd(edge_count, 1ULL);
    out_u[slot] = (i64)(unsigned)comp_best[c];
    out_v[slot] = (i64)comp_low[c];
    out_w2[slot] = key_d2(comp_best[c]);
}

// one pass of pointer jumping (concurrent passes only ever read an ancestor, so in place is safe)
extern "C" __global__ void jump_parents(int m, int* parent) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < m) parent[c] = parent[parent[c]];
}

extern "C" __global__ void relabel(i64 n, int* __restrict__ comp, const int* __restrict__ root,
                                   const int* __restrict__ new_label) {
    const i64 t = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (t < n) comp[t] = new_label[root[comp[t]]];
}

// the component of every node whose points all share one, else -1: a node's run [s, e) is one component when no
// label change (breaks: inclusive prefix count of positions whose label differs from the previous one) lies in it
extern "C" __global__ void node_components(const i64* __restrict__ leaf_start, int depth, const int* __restrict__ comp,
                                           const int* __restrict__ breaks, int* __restrict__ node_comp) {
    const int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= (2 << depth) - 1) return;
    const int level = node_level(k);
    const i64 j = k - ((1 << level) - 1);
    const i64 s = leaf_start[j << (depth - level)], e = leaf_start[(j + 1) << (depth - level)];
    node_comp[k] = e > s && breaks[e - 1] == breaks[s] ? comp[s] : -1;
}

// ---------------------------------------------------------------------------------------------------------
// DBSCAN labels at one eps from the single-linkage chain (chain: the points in Kruskal's concatenation order, gap:
// the MST weight that joined neighbours of the chain). The components of MST edges with w2 <= eps2 are the runs of
// the chain whose inner gaps are all <= eps2; a run is a cluster when it holds a core point.

// 1 where a run starts (the chain's first position, or a gap above eps2)
extern "C" __global__ void run_starts(i64 n, const float* __restrict__ gap, float eps2, int* __restrict__ starts) {
    const i64 t = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (t < n) starts[t] = t == 0 || gap[t - 1] > eps2;
}

// each run's smallest point and whether it holds a core point (run: inclusive prefix count of starts, so run r
// is run[t] - 1); the lanes of a warp on one run reduce first, so a long run costs one atomic per warp
extern "C" __global__ void run_extents(i64 n, const i64* __restrict__ chain, const int* __restrict__ run,
                                       const float* __restrict__ core_sq, float eps2, int* __restrict__ run_min,
                                       int* __restrict__ run_core) {
    const i64 t = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    const bool active = t < n;
    const int r = active ? run[t] - 1 : -1 - (int)(threadIdx.x & 31);
    const unsigned group = __match_any_sync(FULL_MASK, r);
    const int point = active ? (int)chain[t] : 0x7fffffff;
    const unsigned is_core = active && core_sq[point] <= eps2;
    const int smallest = __reduce_min_sync(group, point);
    const unsigned any_core = __reduce_or_sync(group, is_core);
    if (active && (int)(threadIdx.x & 31) == __ffs(group) - 1) {
        atomicMin(run_min + r, smallest);
        if (any_core) run_core[r] = 1;
    }
}

// marks the smallest point of every cluster run; an inclusive prefix count of the marks numbers the clusters by
// their smallest point, as scikit-learn does
extern "C" __global__ void mark_clusters(i64 n, const int* __restrict__ run_min, const int* __restrict__ run_core,
                                         int* __restrict__ mark) {
    const i64 r = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (r < n && run_core[r]) mark[run_min[r]] = 1;
}

// every point of a cluster run (all core points) takes its cluster's number; every other point -1 for now
extern "C" __global__ void label_runs(i64 n, const i64* __restrict__ chain, const int* __restrict__ run,
                                      const int* __restrict__ run_min, const int* __restrict__ run_core,
                                      const int* __restrict__ rank, i64* __restrict__ labels) {
    const i64 t = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (t >= n) return;
    const int r = run[t] - 1;
    labels[chain[t]] = run_core[r] ? (i64)rank[run_min[r]] - 1 : -1;
}

// a non-core point takes the smallest label among its core neighbours within eps (all of them are in its list of
// min_samples - 1 nearest, else it would be a core point); labels of core points are only read here
extern "C" __global__ void label_borders(i64 n, int k, const float* __restrict__ core_sq, const i64* __restrict__ knn_ids,
                                         const float* __restrict__ knn_sq, float eps2, i64* __restrict__ labels) {
    const i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (i >= n || core_sq[i] <= eps2) return;
    i64 best = -1;
    for (int c = 0; c < k; ++c) {
        const i64 j = knn_ids[i * k + c];
        if (j >= 0 && knn_sq[i * k + c] <= eps2 && core_sq[j] <= eps2) {
            const i64 label = labels[j];
            if (best < 0 || label < best) best = label;
        }
    }
    if (best >= 0) labels[i] = best;
}
