// One rank's share of the wind's pressure operator over a partitioned mesh (src/wind/piece.rs),
// built after kernels/wind.cl (its flags and projector). The same arithmetic, in the same order,
// as the assembled operator's gml kernels (`wind_ell_grad_*` and `wind_ell_q*`,
// src/wind/kernels.rs), on a piece's tables (`Assembled::piece`): rows are the rank's local
// vertices, `rows` of them; the tables hold `width` entries a row, column-major (slot × rows +
// row), a row ending at its first column of -1.

// g = P M⁻¹ G x at each local vertex (0 where the pressure is fixed, and at the rows the piece
// does not keep, whose tables are empty).
__kernel void piece_grad(__global const float4 *restrict table, __global const double *restrict x,
                         __global const float8 *restrict bnd, __global const int *restrict flags,
                         __global double4 *restrict g, const int rows, const int width) {
    const int v = get_global_id(0);
    if (v >= rows)
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

// q = D g at each local vertex (0 where the pressure is fixed or the row is not kept).
__kernel void piece_q(__global const float4 *restrict table, __global const double4 *restrict g,
                      __global const int *restrict flags, __global double *restrict q,
                      const int rows, const int width) {
    const int v = get_global_id(0);
    if (v >= rows)
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
