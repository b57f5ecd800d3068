// dpstudio GPU kernels for incremental updates (update.py): the tree takes new points and gives up deleted ones in
// place, and the queries that an update of rho and delta needs, for a few listed points instead of all of them.
//
// This source is compiled appended to vptree.cu (update.py joins the two), whose layout, walks and helpers it uses:
// LeafWarp, Visit, child_split, push_children, ball_bounds(_f), own_coords, sq_to_centre, leaf_block_hits, Key.
// Compiled with --fmad=false, so every squared distance is the float32 rule, bit-identical to the CPU backend
// (engine/cpu/update.py, whose rules these kernels follow).
//
// The listed points of a query are marked by `slot` (one int per tree position: the query's index in the caller's
// list, -1 elsewhere). The walks run one warp per leaf, as vptree.cu's do; a warp whose leaf lists no point returns
// at once, so a launch over every leaf costs little more than reading `slot`.

#define NO_ID_64 0x7fffffffffffffffLL  // min_id of an empty node (numpy.iinfo(int64).max)

// ---------------------------------------------------------------------------------------------------------
// the tree

// the leaf each new point (row-major, m x d) goes to: down the child whose ball grows least, then the nearer centre,
// then the left; an empty child (min_id = NO_ID) takes a point only when its sibling is empty too (then the left)
extern "C" __global__ void route_points(const float* __restrict__ points, i64 m, int d, int depth,
                                        const float* __restrict__ center, const float* __restrict__ radius,
                                        const i64* __restrict__ min_id, i64* __restrict__ leaves) {
    const i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (i >= m) return;
    const float* q = points + i * d;
    const double inf = 1.0 / 0.0;
    i64 k = 0;
    for (int level = 0; level < depth; ++level) {
        i64 best = 2 * k + 1;
        double best_growth = inf, best_near = inf;
        for (i64 child = 2 * k + 1; child <= 2 * k + 2; ++child) {
            const double s = sqrt((double)sq_rows(q, center + child * d, d));
            const double growth = min_id[child] == NO_ID_64 ? inf : fmax(0.0, s - (double)radius[child]);
            if (growth < best_growth || (growth == best_growth && s < best_near)) {
                best = child;
                best_growth = growth;
                best_near = s;
            }
        }
        k = best_growth == inf ? 2 * k + 1 : best;
    }
    leaves[i] = k - ((1LL << depth) - 1);
}

// first of two passes that grow the balls: every empty node on a new point's way up is claimed by the smallest new
// id that reaches it (the CPU's serial loop gives it to the first point in index order), and its radius restarts at 0
extern "C" __global__ void claim_empty_nodes(i64 m, int depth, i64 first_id, const i64* __restrict__ leaves,
                                             const i64* __restrict__ old_min_id, i64* __restrict__ min_id,
                                             float* __restrict__ radius) {
    const i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (i >= m) return;
    for (i64 k = (1LL << depth) - 1 + leaves[i];; k = (k - 1) >> 1) {
        if (old_min_id[k] == NO_ID_64) {
            atomicMin((long long*)(min_id + k), (long long)(first_id + i));
            radius[k] = 0.0f;
        }
        if (k == 0) break;
    }
}

// second pass: every ball on a new point's way up grows to hold it (atomicMax on the bits of non-negative floats);
// a claimed node's centre is its claiming point, which writes it
extern "C" __global__ void grow_balls(const float* __restrict__ points, i64 m, int d, int depth, i64 first_id,
                                      const i64* __restrict__ leaves, const i64* __restrict__ old_min_id,
                                      const i64* __restrict__ min_id, float* __restrict__ center,
                                      unsigned* __restrict__ radius_bits) {
    const i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (i >= m) return;
    const float* q = points + i * d;
    for (i64 k = (1LL << depth) - 1 + leaves[i];; k = (k - 1) >> 1) {
        const bool claimed = old_min_id[k] == NO_ID_64;
        const float* centre = claimed ? points + (min_id[k] - first_id) * d : center + k * d;
        atomicMax(radius_bits + k, __float_as_uint((float)sqrt((double)sq_rows(q, centre, d))));
        if (claimed && min_id[k] == first_id + i)
            for (int c = 0; c < d; ++c) center[k * d + c] = q[c];
        if (k == 0) break;
    }
}

// the tree's arrays with the new points: one warp per old leaf copies its run to its new start, then appends its new
// points (sorted by leaf: leaf j's are new_points[first_new[j] .. first_new[j + 1]), ids first_id + their rows)
extern "C" __global__ void splice_leaves(const float* __restrict__ coords, i64 n_old, int d, int depth,
                                         const i64* __restrict__ ids, const i64* __restrict__ leaf_start,
                                         const i64* __restrict__ first_new, const float* __restrict__ new_points,
                                         const i64* __restrict__ new_ids, float* __restrict__ out_coords, i64 n,
                                         i64* __restrict__ out_ids) {
    const i64 j = (blockIdx.x * (i64)blockDim.x + threadIdx.x) >> 5;
    const int lane = threadIdx.x & 31;
    if (j >= (1LL << depth)) return;
    const i64 s = leaf_start[j], e = leaf_start[j + 1], shift = first_new[j];
    for (i64 t = s + lane; t < e; t += 32) {
        out_ids[t + shift] = ids[t];
        for (int c = 0; c < d; ++c) out_coords[c * n + t + shift] = coords[c * n_old + t];
    }
    for (i64 i = first_new[j] + lane; i < first_new[j + 1]; i += 32) {
        const i64 slot = e + i;  // the leaf's old end, moved by the new points of the leaves before it and its own
        out_ids[slot] = new_ids[i];
        for (int c = 0; c < d; ++c) out_coords[c * n + slot] = new_points[i * d + c];
    }
}

// splitting every leaf in two (split_leaves): each leaf's farthest point from its first (the first of equals) is its
// vantage point, far[j] (-1: empty leaf), and each position's key orders the leaf by distance to it, as
// level_keys does: the leaf in the high bits, the squared distance's bits in the low ones
extern "C" __global__ void split_keys(const float* __restrict__ coords, i64 n, int d, int depth,
                                      const i64* __restrict__ leaf_start, i64* __restrict__ far,
                                      unsigned long long* __restrict__ keys) {
    const i64 j = (blockIdx.x * (i64)blockDim.x + threadIdx.x) >> 5;
    const int lane = threadIdx.x & 31;
    if (j >= (1LL << depth)) return;
    const i64 s = leaf_start[j], e = leaf_start[j + 1];
    if (s == e) {
        if (lane == 0) far[j] = -1;
        return;
    }
    unsigned long long best = 0ULL;  // distance bits over the inverted offset: the largest is the first farthest
    for (i64 t = s + lane; t < e; t += 32)
        best = max(best, ((unsigned long long)__float_as_uint(sq_between(coords, n, d, t, s)) << 32) |
                             (0xffffffffu - (unsigned)(t - s)));
    for (int mask = 16; mask > 0; mask >>= 1) best = max(best, __shfl_xor_sync(FULL_MASK, best, mask));
    const i64 vantage = s + (0xffffffffu - (unsigned)(best & 0xffffffffu));
    if (lane == 0) far[j] = vantage;
    for (i64 t = s + lane; t < e; t += 32)
        keys[t] = ((unsigned long long)j << 32) | __float_as_uint(sq_between(coords, n, d, t, vantage));
}

// ball (centre = float64 mean in tree order, radius) and smallest id of the listed nodes: node nodes[i] owns tree
// positions [starts[i], ends[i]); one thread per node sums its run in order, as the CPU's split does
extern "C" __global__ void node_balls(const float* __restrict__ coords, i64 n, int d, i64 count,
                                      const i64* __restrict__ starts, const i64* __restrict__ ends,
                                      const i64* __restrict__ nodes, const i64* __restrict__ ids,
                                      float* __restrict__ center, float* __restrict__ radius, i64* __restrict__ min_id) {
    const i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (i >= count) return;
    const i64 s = starts[i], e = ends[i], k = nodes[i];
    float* centre = center + k * d;
    i64 smallest = NO_ID_64;
    for (int c = 0; c < d; ++c) {
        double acc = 0.0;
        for (i64 t = s; t < e; ++t) acc += (double)coords[c * n + t];
        centre[c] = e > s ? (float)(acc / (double)(e - s)) : 0.0f;
    }
    float r2 = 0.0f;
    for (i64 t = s; t < e; ++t) {
        r2 = fmaxf(r2, sq_to_row(coords, n, d, t, centre));
        smallest = min(smallest, ids[t]);
    }
    radius[k] = (float)sqrt((double)r2);
    min_id[k] = smallest;
}

// Subtree rebuilds, all at once: segment r holds the points of one subtree (rows first[r] .. first[r + 1] of the
// row-major `sub`, in index order), rebuilt with the GPU build's rules (level_keys, split_nodes) as a fresh VP-tree of
// height[r] levels. Per level, one key per point and one stable radix sort of all segments' keys; the segment's nodes
// of a level take the key range from node_first[r] (node_first: prefix of 2^height), so segments never mix.

// the segment holding row t: the last r with first[r] <= t
__device__ __forceinline__ int segment_of(const i64* __restrict__ first, int segments, i64 t) {
    int lo = 0, hi = segments - 1;
    while (lo < hi) {
        const int mid = (lo + hi + 1) >> 1;
        if (first[mid] <= t) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

// each segment's first vantage point: the farthest row from its first row, the first of equals (as the build's argmax)
extern "C" __global__ void farthest_from_first(const float* __restrict__ sub, i64 rows, int d, int segments,
                                               const i64* __restrict__ first, unsigned long long* __restrict__ best) {
    const i64 t = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (t >= rows) return;
    const int r = segment_of(first, segments, t);
    const float d2 = sq_rows(sub + t * d, sub + first[r] * d, d);
    atomicMax(best + r, ((unsigned long long)__float_as_uint(d2) << 32) | (0xffffffffu - (unsigned)(t - first[r])));
}

// level_keys for every segment: row t's node (of its segment's run arithmetic) over its squared distance to the
// node's vantage row; a segment of fewer levels keeps its order (its key is its tree position)
extern "C" __global__ void segment_keys(const float* __restrict__ sub, i64 rows, int d, int level, int segments,
                                        const i64* __restrict__ first, const int* __restrict__ height,
                                        const i64* __restrict__ node_first, const i64* __restrict__ order,
                                        const i64* __restrict__ vantage, unsigned long long* __restrict__ keys) {
    const i64 t = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (t >= rows) return;
    const int r = segment_of(first, segments, t);
    const i64 m = first[r + 1] - first[r], local = t - first[r];
    if (level >= height[r]) {
        keys[t] = ((unsigned long long)node_first[r] << 32) | (unsigned long long)local;
        return;
    }
    const i64 j = node_at(m, level, local);
    const float d2 = sq_rows(sub + order[t] * d, sub + vantage[node_first[r] + j] * d, d);
    keys[t] = ((unsigned long long)(node_first[r] + j) << 32) | __float_as_uint(d2);
}

// split_nodes for every segment: node jj of `level` (thread node_first[r] + jj) writes its split radius and vantage
// id into the tree's node (root_level[r] + level, (root_j[r] << level) + jj), and its children's vantage rows
extern "C" __global__ void segment_splits(int level, int segments, const i64* __restrict__ first,
                                          const int* __restrict__ height, const i64* __restrict__ node_first,
                                          const int* __restrict__ root_level, const i64* __restrict__ root_j,
                                          const unsigned long long* __restrict__ sorted_keys,
                                          const i64* __restrict__ order, const i64* __restrict__ members,
                                          const i64* __restrict__ vantage, i64* __restrict__ next_vantage,
                                          i64* __restrict__ tree_vantage, float* __restrict__ tree_split_radius) {
    const i64 g = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (g >= node_first[segments]) return;
    const int r = segment_of(node_first, segments, g);
    const i64 jj = g - node_first[r];
    if (level >= height[r] || jj >= (1LL << level)) return;
    const i64 m = first[r + 1] - first[r], base = first[r];
    const i64 end = base + seg_start(m, level, jj + 1), mid = base + seg_start(m, level + 1, 2 * jj + 1);
    const i64 k = (1LL << (root_level[r] + level)) - 1 + (root_j[r] << level) + jj;
    tree_split_radius[k] = (float)sqrt((double)__uint_as_float((unsigned)(sorted_keys[mid - 1] & 0xffffffffu)));
    tree_vantage[k] = members[vantage[node_first[r] + jj]];
    next_vantage[node_first[r] + 2 * jj] = order[mid - 1];
    next_vantage[node_first[r] + 2 * jj + 1] = order[end - 1];
}

// ---------------------------------------------------------------------------------------------------------
// queries for the listed points

// the warp's listed lanes (slot[p] >= 0); idle and unlisted lanes walk along inactive
__device__ __forceinline__ unsigned listed_lanes(const int* __restrict__ slot, LeafWarp& w) {
    w.active = w.active && slot[w.p] >= 0;
    return __ballot_sync(FULL_MASK, w.active);
}

// cut-off counts between the listed points and all points, each listed point's walk deciding whole nodes inside or
// outside its reach: `rows` (or nullptr) gets each listed point's count of points within reach less itself (rho_at),
// `count` / `node_count` (or nullptr) the number of listed points within reach of each position (count_near: a
// whole node inside a listed point's reach is tallied once, add_node_tallies hands the tallies down)
extern "C" __global__ void __launch_bounds__(256)
    listed_counts(const float* __restrict__ coords, i64 n, int d, int depth, const i64* __restrict__ leaf_start,
                  const float* __restrict__ center, const float* __restrict__ radius, float reach2, double reach_lo,
                  double reach_hi, double slack, const int* __restrict__ slot, unsigned* __restrict__ count,
                  unsigned* __restrict__ node_count, double* __restrict__ rows) {
    LeafWarp w;
    if (!leaf_warp(leaf_start, depth, w)) return;
    const unsigned listed = listed_lanes(slot, w);
    if (!listed) return;
    const int lane = w.lane;
    const float reach_lo_f = __double2float_rd(reach_lo), reach_hi_f = __double2float_ru(reach_hi);
    const float slack_f = float_slack(slack);
    float self[SELF_DIMS];
    own_coords(coords, n, d, w.pq, self);
    int total = 0;

    Visit stack[STACK];
    stack[0] = {0, 0, (int)n, listed};
    int top = 1;
    while (top > 0) {
        const Visit v = stack[--top];
        const int mid = child_split(leaf_start, depth, v.node);
        const bool mine = (v.lanes >> lane) & 1u;
        const BoundsF b = ball_bounds_f(sq_to_centre<false>(self, coords, n, d, w.pq, center + (i64)v.node * d),
                                        radius[v.node], slack_f);
        const bool inside = mine && b.upper < reach_lo_f;
        if (inside) total += v.end - v.start;
        const unsigned inside_lanes = __ballot_sync(FULL_MASK, inside);
        if (node_count != nullptr && inside_lanes && lane == 0)
            atomicAdd(node_count + v.node, (unsigned)__popc(inside_lanes));
        const unsigned undecided = __ballot_sync(FULL_MASK, mine && !inside && !(b.lower >= reach_hi_f));
        if (!undecided) continue;
        if (node_level(v.node) < depth) {
            push_children(stack, top, v, mid, undecided, NO_POSITION);
            continue;
        }
        int column;
        const int hits = leaf_block_hits(coords, n, d, w.qs, v.start, v.end, lane, reach2, undecided, column);
        if ((undecided >> lane) & 1u) total += hits;
        if (count != nullptr && column > 0) atomicAdd(count + v.start + block_column(lane), (unsigned)column);
    }
    if (rows != nullptr && w.active) rows[slot[w.p]] = (double)total - 1.0;  // the count includes the point itself
}

// marked[t] = 1 for every position t that a listed source s newly outranks within t's own reach: rank_old[t] <
// rank_old[s], rank_new[t] > rank_new[s] and the squared distance <= reach2[t]. A node is opened for s only if it
// holds a point ranked before s in the old order (node_min_old) and after it in the new one (node_max_new), and its
// ball comes within the largest reach of its points (node_reach2; negative: none has a reach)
extern "C" __global__ void __launch_bounds__(256)
    mark_outranked(const float* __restrict__ coords, i64 n, int d, int depth, const i64* __restrict__ leaf_start,
                   const float* __restrict__ center, const float* __restrict__ radius, double slack,
                   const int* __restrict__ slot, const int* __restrict__ rank_old, const int* __restrict__ rank_new,
                   const float* __restrict__ reach2, const float* __restrict__ node_reach2,
                   const int* __restrict__ node_min_old, const int* __restrict__ node_max_new,
                   unsigned char* __restrict__ marked) {
    LeafWarp w;
    if (!leaf_warp(leaf_start, depth, w)) return;
    const unsigned listed = listed_lanes(slot, w);
    if (!listed) return;
    const int lane = w.lane;
    const int my_old = rank_old[w.pq], my_new = rank_new[w.pq];

    Visit stack[STACK];
    stack[0] = {0, 0, (int)n, listed};
    int top = 1;
    while (top > 0) {
        const Visit v = stack[--top];
        const int mid = child_split(leaf_start, depth, v.node);
        const int k = v.node;
        // the sign bit, not >= 0: an empty node's maximum (INT32_MIN) reads as -0.0
        bool wanted = ((v.lanes >> lane) & 1u) && node_min_old[k] < my_old && node_max_new[k] > my_new &&
                      __float_as_int(node_reach2[k]) >= 0;
        if (wanted) {
            const double lower = ball_bounds(sq_to_row(coords, n, d, w.pq, center + (i64)k * d), radius[k], slack).lower;
            wanted = !(lower > sqrt((double)node_reach2[k]));
        }
        const unsigned still = __ballot_sync(FULL_MASK, wanted);
        if (!still) continue;
        if (node_level(k) < depth) {
            push_children(stack, top, v, mid, still, NO_POSITION);
            continue;
        }
        if (wanted)
            for (i64 t = v.start; t < v.end; ++t)
                if (rank_old[t] < my_old && rank_new[t] > my_new && sq_between(coords, n, d, t, w.p) <= reach2[t])
                    marked[t] = 1;  // every writer writes 1
    }
}

// for every listed query p (slot i): the least (squared distance, id) key, strictly before the bound
// (best_d2[i], best_id[i]) it starts from, over the positions t != p with rank_lo[t] < below[i] and, when rank_hi
// is given, rank_hi[t] > above[i]; a node is opened only if node_min_lo / node_max_hi allow such a point and its
// ball can hold one before the best so far. best_d2 / best_id are updated in place (the bound stays where none is).
extern "C" __global__ void __launch_bounds__(256)
    nearest_where(const float* __restrict__ coords, i64 n, int d, int depth, const i64* __restrict__ leaf_start,
                  const i64* __restrict__ ids, const float* __restrict__ center, const float* __restrict__ radius,
                  const unsigned* __restrict__ min_id, double slack, const int* __restrict__ slot,
                  const int* __restrict__ below, const int* __restrict__ above, const int* __restrict__ rank_lo,
                  const int* __restrict__ rank_hi, const int* __restrict__ node_min_lo,
                  const int* __restrict__ node_max_hi, float* __restrict__ best_d2, i64* __restrict__ best_id) {
    LeafWarp w;
    if (!leaf_warp(leaf_start, depth, w)) return;
    const unsigned listed = listed_lanes(slot, w);
    if (!listed) return;
    const int lane = w.lane;
    const int i = w.active ? slot[w.p] : 0;
    const int lo = w.active ? below[i] : 0, hi = w.active && rank_hi != nullptr ? above[i] : 0;
    const Key bound = w.active ? nearest_key(best_d2[i], min(best_id[i], (i64)0xffffffffLL)) : NO_KEY;
    Key best = bound;

    Visit stack[STACK];
    stack[0] = {0, 0, (int)n, listed};
    int top = 1;
    while (top > 0) {
        const Visit v = stack[--top];
        const int mid = child_split(leaf_start, depth, v.node);
        const int k = v.node;
        bool wanted = ((v.lanes >> lane) & 1u) && node_min_lo[k] < lo && (rank_hi == nullptr || node_max_hi[k] > hi);
        if (wanted) {
            const double lower = ball_bounds(sq_to_row(coords, n, d, w.pq, center + (i64)k * d), radius[k], slack).lower;
            const double reach = sqrt((double)key_d2(best));
            // everything farther, or at best as far with larger ids only
            wanted = !(lower > reach || (lower >= reach && (i64)min_id[k] > key_id(best)));
        }
        const unsigned still = __ballot_sync(FULL_MASK, wanted);
        if (!still) continue;
        if (node_level(k) < depth) {
            push_children(stack, top, v, mid, still, w.qs);  // the query's own leaf first: a good bound early
            continue;
        }
        if (wanted)
            for (i64 t = v.start; t < v.end; ++t)
                if (t != w.p && rank_lo[t] < lo && (rank_hi == nullptr || rank_hi[t] > hi))
                    best = min(best, nearest_key(sq_between(coords, n, d, t, w.p), ids[t]));
    }
    if (w.active && best < bound) {
        best_d2[i] = key_d2(best);
        best_id[i] = key_id(best);
    }
}

// squared distances from tree position p to the listed positions
extern "C" __global__ void sq_to_positions(const float* __restrict__ coords, i64 n, int d, i64 p,
                                           const i64* __restrict__ positions, i64 m, float* __restrict__ out) {
    const i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (i < m) out[i] = sq_between(coords, n, d, positions[i], p);
}

// merging two lists sorted in density order (rho descending, index ascending; no two entries equal): each entry's
// place in the merged list is its own index plus the number of the other list's entries before it
extern "C" __global__ void merge_places(const i64* __restrict__ entries, i64 m, const i64* __restrict__ other,
                                        i64 m_other, const double* __restrict__ rho, i64* __restrict__ out) {
    const i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (i >= m) return;
    const i64 x = entries[i];
    const double rx = rho[x];
    i64 lo = 0, hi = m_other;
    while (lo < hi) {
        const i64 mid = (lo + hi) >> 1, y = other[mid];
        if (rho[y] > rx || (rho[y] == rx && y < x)) lo = mid + 1;
        else hi = mid;
    }
    out[i + lo] = x;
}
