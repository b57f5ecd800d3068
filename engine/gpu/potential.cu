// Data-field potentials for a grid of beta = 1 / sigma^2 in one walk of the VP-tree (the entropy dc rule), as
// engine/cpu/potential.py computes them: phi_q(beta) = 1 + sum over j != q with d^2 < reach2(beta) of
// exp(-d^2 beta), beta = (first[w] + k) * dbeta[w], reduced at once to sum phi and sum phi log phi per beta.
// Compiled appended to vptree.cu (the same walk as gaussian_rho, over a list of query leaves).

#define MAX_VALUES 64

// base^exponent by squaring, in the CPU's order of operations
__device__ __forceinline__ double whole_power(double base, i64 exponent) {
    double result = 1.0;
    while (exponent > 0) {
        if (exponent & 1) result *= base;
        base *= base;
        exponent >>= 1;
    }
    return result;
}

// one pair's terms for every beta whose reach holds it: windows ascend in beta, so reaches fall
__device__ __forceinline__ void add_pair(float d2, const double* __restrict__ dbeta, const i64* __restrict__ first,
                                         const float* __restrict__ reach2, int windows, int steps, double (&acc)[MAX_VALUES]) {
    for (int w = 0; w < windows; ++w) {
        int held = 0;
        while (held < steps && d2 < reach2[w * steps + held]) ++held;
        if (held == 0) return;
        const double ratio = exp(-(double)d2 * dbeta[w]);
        double term = whole_power(ratio, first[w]);
        for (int k = 0; k < held; ++k) {
            acc[w * steps + k] += term;
            term *= ratio;
        }
    }
}

// one warp per listed leaf, lane l the leaf's query qs + l; sums over the warp, then one atomic per value
extern "C" __global__ void potential_sums(const float* __restrict__ coords, i64 n, int d, int depth,
                                          const i64* __restrict__ leaf_start, const float* __restrict__ center, const float* __restrict__ radius,
                                          const i64* __restrict__ leaves, i64 n_listed, const double* __restrict__ dbeta,
                                          const i64* __restrict__ first, const float* __restrict__ reach2, int windows,
                                          int steps, double reach_hi, double slack, double* __restrict__ phi_sum,
                                          double* __restrict__ phi_log_phi) {
    const i64 listed = (blockIdx.x * (i64)blockDim.x + threadIdx.x) >> 5;
    if (listed >= n_listed) return;  // the whole warp at once
    const int lane = threadIdx.x & 31, n_values = windows * steps;
    const i64 leaf = leaves[listed], qs = leaf_start[leaf], qe = leaf_start[leaf + 1];
    const i64 p = qs + lane;
    const bool active = p < qe;
    const i64 pq = active ? p : qs;  // idle lanes shadow the first query for the votes, and add nothing
    const float reach_hi_f = __double2float_ru(reach_hi), slack_f = float_slack(slack);
    float self[SELF_DIMS];
    own_coords(coords, n, d, pq, self);
    double acc[MAX_VALUES];
    for (int k = 0; k < n_values; ++k) acc[k] = 0.0;

    Visit stack[STACK];
    stack[0] = {0, 0, (int)n, __ballot_sync(FULL_MASK, active)};
    int top = 1;
    while (top > 0) {
        const Visit v = stack[--top];
        const int mid = child_split(leaf_start, depth, v.node);
        const bool mine = (v.lanes >> lane) & 1u;
        const float lower = ball_bounds_f(sq_to_centre<false>(self, coords, n, d, pq, center + (i64)v.node * d),
                                          radius[v.node], slack_f).lower;
        const bool near = mine && !(lower >= reach_hi_f);
        const unsigned undecided = __ballot_sync(FULL_MASK, near);
        if (!undecided) continue;
        if (node_level(v.node) < depth) {
            push_children(stack, top, v, mid, undecided, NO_POSITION);
            continue;
        }
        if (near)
            for (i64 t = v.start; t < v.end; ++t)
                if (t != p) add_pair(sq_between(coords, n, d, t, p), dbeta, first, reach2, windows, steps, acc);
    }
    for (int k = 0; k < n_values; ++k) {
        const double phi = active ? 1.0 + acc[k] : 0.0;  // the own unit mass keeps phi >= 1: no log of 0
        double total = phi, weighted = active ? phi * log(phi) : 0.0;
        for (int offset = 16; offset > 0; offset >>= 1) {
            total += __shfl_down_sync(FULL_MASK, total, offset);
            weighted += __shfl_down_sync(FULL_MASK, weighted, offset);
        }
        if (lane == 0) {
            atomicAdd(phi_sum + k, total);
            atomicAdd(phi_log_phi + k, weighted);
        }
    }
}
