// One rank's share of the wind's pressure operator over a partitioned mesh (src/wind/piece.rs),
// built after kernels/wind.cl (its flags and projector). The same arithmetic, in the same order,
// as the assembled operator's gml kernels (`wind_ell_grad_*` and `wind_ell_q*`,
// src/wind/kernels.rs), on a piece's tables (`Assembled::piece`): rows are the rank's local
// vertices, `rows` of them; the tables hold `width` entries a row, column-major (slot × rows +
// row), a row ending at its first column of -1.

// g = P M⁻¹ G x at the local vertices first .. end − 1 (0 where the pressure is fixed, and
// at the rows the piece does not keep, whose tables are empty).
__kernel void piece_grad(__global const float4 *restrict table, __global const double *restrict x,
                         __global const float8 *restrict bnd, __global const int *restrict flags,
                         __global double4 *restrict g, const int rows, const int width,
                         const int first, const int end) {
    const int v = first + (int)get_global_id(0);
    if (v >= end)
        return;
    double4 s = 0.0;
    for (int k = 0; k < width; k++) {
        const float4 c = table[k * rows + v];
        const int w = as_int(c.w);
        if (w < 0)
            break;
        s += convert_double4(c) * x[w];
    }
    s.w = 0.0;
    const float8 b = bnd[v];
    g[v] = (flags[v] & WIND_FIXED_PRESSURE) ? (double4)(0.0) : wind_project_d(b, s) * (double)b.s6;
}

// q = D g at the local vertices first .. end − 1 (0 where the pressure is fixed or the row is
// not kept).
__kernel void piece_q(__global const float4 *restrict table, __global const double4 *restrict g,
                      __global const int *restrict flags, __global double *restrict q,
                      const int rows, const int width, const int first, const int end) {
    const int v = first + (int)get_global_id(0);
    if (v >= end)
        return;
    double acc = 0.0;
    for (int k = 0; k < width; k++) {
        const float4 c = table[k * rows + v];
        const int w = as_int(c.w);
        if (w < 0)
            break;
        const double4 gw = g[w];
        acc += (double)c.x * gw.x + (double)c.y * gw.y + (double)c.z * gw.z;
    }
    if (flags[v] & WIND_FIXED_PRESSURE)
        acc = 0.0;
    q[v] = acc;
}

// The distributed pressure solve's vector work (`PieceSystem::solve`), on the owned vertices
// (local indices below `owned`): PIECE_GROUP work-items a group, each group's sums written to
// `partial` (sum k of group g at partial[k * groups + g]), folded over the groups by
// `piece_fold` in a fixed order, so that a rank's sums do not depend on timing. Work-items past
// `owned` add zeros.
#define PIECE_GROUP 256

// The group's sum of `value` into partial[k * get_num_groups(0) + group], by a fixed tree.
inline void piece_group_sum(double value, __local double *scratch, __global double *partial,
                            const int k) {
    const int t = get_local_id(0);
    scratch[t] = value;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int span = PIECE_GROUP / 2; span > 0; span >>= 1) {
        if (t < span)
            scratch[t] += scratch[t + span];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (t == 0)
        partial[k * get_num_groups(0) + get_group_id(0)] = scratch[0];
    barrier(CLK_LOCAL_MEM_FENCE);
}

// The `count` sums of `groups` group partials each (partial[k * groups + g]) into folded[k],
// in one work-group: work-item t adds groups t, t + PIECE_GROUP, ... in that order, then the
// fixed tree; so the host reads `count` doubles, not every group's, and the order is fixed.
__kernel __attribute__((reqd_work_group_size(PIECE_GROUP, 1, 1))) void
piece_fold(__global const double *restrict partial, const int groups, const int count,
           __global double *restrict folded) {
    __local double scratch[PIECE_GROUP];
    const int t = get_local_id(0);
    for (int k = 0; k < count; k++) {
        double sum = 0.0;
        for (int g = t; g < groups; g += PIECE_GROUP)
            sum += partial[k * groups + g];
        piece_group_sum(sum, scratch, folded, k);
    }
}

// The solve is the Chronopoulos–Gear form of the preconditioned CG: one product (w = A u) and
// one set of sums (γ = r·u, δ = w·u, r·r) an iteration, so one reduction over the ranks.

// The start: r = b − q (q = A x), u = M⁻¹ r; sums b·b.
__kernel __attribute__((reqd_work_group_size(PIECE_GROUP, 1, 1))) void
piece_start(__global const double *restrict b, __global const double *restrict q,
            __global const double *restrict inverse_diagonal, __global double *restrict r,
            __global double *restrict u, __global double *restrict partial, const int owned) {
    __local double scratch[PIECE_GROUP];
    const int i = get_global_id(0);
    double bb = 0.0;
    if (i < owned) {
        const double ri = b[i] - q[i];
        r[i] = ri;
        u[i] = ri * inverse_diagonal[i];
        bb = b[i] * b[i];
    }
    piece_group_sum(bb, scratch, partial, 0);
}

// Sums γ = r·u, δ = w·u, r·r.
__kernel __attribute__((reqd_work_group_size(PIECE_GROUP, 1, 1))) void
piece_sums(__global const double *restrict r, __global const double *restrict u,
           __global const double *restrict w, __global double *restrict partial,
           const int owned) {
    __local double scratch[PIECE_GROUP];
    const int i = get_global_id(0);
    double ru = 0.0, wu = 0.0, rr = 0.0;
    if (i < owned) {
        ru = r[i] * u[i];
        wu = w[i] * u[i];
        rr = r[i] * r[i];
    }
    piece_group_sum(ru, scratch, partial, 0);
    piece_group_sum(wu, scratch, partial, 1);
    piece_group_sum(rr, scratch, partial, 2);
}

// p = u + β p, s = w + β s (s = A p), x += α p, r −= α s, u = M⁻¹ r.
__kernel void piece_update(__global double *restrict x, __global double *restrict r,
                           __global double *restrict u, __global const double *restrict w,
                           __global double *restrict p, __global double *restrict s,
                           __global const double *restrict inverse_diagonal, const double alpha,
                           const double beta, const int owned) {
    const int i = get_global_id(0);
    if (i >= owned)
        return;
    const double pi = u[i] + beta * p[i];
    const double si = w[i] + beta * s[i];
    p[i] = pi;
    s[i] = si;
    x[i] += alpha * pi;
    const double ri = r[i] - alpha * si;
    r[i] = ri;
    u[i] = ri * inverse_diagonal[i];
}

// out[i] = values[at[i]]: the entries a halo exchange sends, packed.
__kernel void piece_pack(__global const double *restrict values, __global const int *restrict at,
                         __global double *restrict out, const int count) {
    const int i = get_global_id(0);
    if (i < count)
        out[i] = values[at[i]];
}

// values[at[i]] = received[i]: the halo entries a halo exchange receives.
__kernel void piece_unpack(__global const double *restrict received,
                           __global const int *restrict at, __global double *restrict values,
                           const int count) {
    const int i = get_global_id(0);
    if (i < count)
        values[at[i]] = received[i];
}
