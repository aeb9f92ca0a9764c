// Helpers of the ground refresh's gml kernels (src/wind/refresh.rs), pasted before each
// kernel compiled for the refresh (at set-up when refreshes are on, else at the first), after
// kernels/wind.cl.
//
// The geometry repeats the host's `tet_terms` (src/wind/geometry.rs) operation for operation,
// in the same order, with explicit cross and dot products (glam's order, not the builtins)
// and with contraction into fused multiply-adds off inside every function that computes
// (`FP_CONTRACT OFF` at the head of a compound statement holds to its end, so the other
// wind kernels, which this file is pasted before, keep their own setting): the coefficients
// equal the host's bit for bit where the device rounds IEEE double correctly.

// Volumes below this fraction of the cube of the mean edge are degenerate (geometry.rs).
#define WIND_DEGENERATE 1e-9

// The result of a tetrahedron's check.
#define WIND_TET_OK 0
#define WIND_TET_DEGENERATE 1
#define WIND_TET_INVERTED 2

// glam's `DVec3::cross`.
inline double3 wind_cross(double3 a, double3 b) {
#pragma OPENCL FP_CONTRACT OFF
    return (double3)(a.y * b.z - b.y * a.z, a.z * b.x - b.z * a.x, a.x * b.y - b.x * a.y);
}

// glam's `DVec3::dot`.
inline double wind_dot(double3 a, double3 b) {
#pragma OPENCL FP_CONTRACT OFF
    return (a.x * b.x + a.y * b.y) + a.z * b.z;
}

// Whether the tetrahedron p0..p3 is usable: WIND_TET_OK, or degenerate (volume not above
// WIND_DEGENERATE times the cube of its mean edge, or not a number), or inverted (oriented
// unlike `orientation`, the sign of the mesh's first tetrahedron).
inline int wind_tet_check(double4 p0, double4 p1, double4 p2, double4 p3, double orientation) {
#pragma OPENCL FP_CONTRACT OFF
    const double3 a = p0.xyz;
    const double3 e1 = p1.xyz - a, e2 = p2.xyz - a, e3 = p3.xyz - a;
    const double det = wind_dot(e1, wind_cross(e2, e3));
    const double volume = fabs(det) / 6.0;
    const double3 e4 = e2 - e1, e5 = e3 - e1, e6 = e3 - e2;
    const double mean_edge = (sqrt(wind_dot(e1, e1)) + sqrt(wind_dot(e2, e2))
                            + sqrt(wind_dot(e3, e3)) + sqrt(wind_dot(e4, e4))
                            + sqrt(wind_dot(e5, e5)) + sqrt(wind_dot(e6, e6))) / 6.0;
    if (isnan(volume) || volume <= WIND_DEGENERATE * mean_edge * mean_edge * mean_edge)
        return WIND_TET_DEGENERATE;
    if ((det > 0.0 ? 1.0 : -1.0) != orientation) return WIND_TET_INVERTED;
    return WIND_TET_OK;
}

// `(V/4) ∇φ_j` of the tetrahedron p0..p3 for j = 0..3 (xyz, w zero), rounded to float as the
// host does, into `cof`; returns V/4 (double), the tetrahedron's share of each vertex's
// lumped volume. The tetrahedron must have passed wind_tet_check.
inline double wind_tet_coefficients(double4 p0, double4 p1, double4 p2, double4 p3,
                                    float16 *cof) {
#pragma OPENCL FP_CONTRACT OFF
    const double3 a = p0.xyz;
    const double3 e1 = p1.xyz - a, e2 = p2.xyz - a, e3 = p3.xyz - a;
    const double det = wind_dot(e1, wind_cross(e2, e3));
    const double volume = fabs(det) / 6.0;
    const double3 g1 = wind_cross(e2, e3) / det;
    const double3 g2 = wind_cross(e3, e1) / det;
    const double3 g3 = wind_cross(e1, e2) / det;
    const double3 g0 = -((g1 + g2) + g3);
    const double quarter = volume / 4.0;
    *cof = (float16)(convert_float3(g0 * quarter), 0.0f, convert_float3(g1 * quarter), 0.0f,
                     convert_float3(g2 * quarter), 0.0f, convert_float3(g3 * quarter), 0.0f);
    return quarter;
}

// Coefficient vector `j` (0..3) of a tetrahedron's float16, in double.
inline double3 wind_coefficient(float16 c, int j) {
    const float4 v = j == 0 ? c.s0123 : j == 1 ? c.s4567 : j == 2 ? c.s89ab : c.scdef;
    return convert_double3(v.xyz);
}

// Vertex w's term of a column of the Jacobi diagonal (diagonal.rs): `d · P_w d / m_w`, with
// `d = D_vw`, `P_w` the projector in `bnd` (zero where w's pressure is fixed) and `m_w` its
// lumped volume.
inline double wind_diagonal_term(double3 d, float8 bnd, double m, int flags) {
#pragma OPENCL FP_CONTRACT OFF
    if (flags & WIND_FIXED_PRESSURE) return 0.0;
    const double8 p = convert_double8(bnd);
    const double3 pd = (double3)((p.s0 * d.x + p.s1 * d.y) + p.s2 * d.z,
                                 (p.s1 * d.x + p.s3 * d.y) + p.s4 * d.z,
                                 (p.s2 * d.x + p.s4 * d.y) + p.s5 * d.z);
    return wind_dot(d, pd) / m;
}

// The boundary's conditions (src/wind/boundary.rs, `MovedIndex::conditions`), operation for
// operation in the host's order: the projector and inflow flux of one vertex from the flat
// index of `MovedIndex::flat` (`table`: per boundary triangle its vertices and its inside
// vertex as an int4, then from `group_end_at` the slip groups' ends, from `slip_at` the slip
// list, from `inflow_at` the inflow list; `row`: the vertex's groups and inflow range), the
// double coordinates `crd` and the inflow profile `inflow` (float, as the host reads it).

// Triangle `nodes`' normal times its area, pointing away from its inside vertex `nodes.w`
// (the host's `oriented_normals`).
inline double3 wind_area_normal(__global const double4 *crd, int4 nodes) {
#pragma OPENCL FP_CONTRACT OFF
    const double3 a = crd[nodes.x].xyz, b = crd[nodes.y].xyz, c = crd[nodes.z].xyz;
    const double3 n = wind_cross(b - a, c - a) / 2.0;
    return wind_dot(n, crd[nodes.w].xyz - a) > 0.0 ? -n : n;
}

// `line` with its projector (s0..s5) and inflow flux (s7) recomputed, rounded to float as the
// host's `staged_line` does; s6 is kept. `slip_sine` is SLIP_SINE.
inline float8 wind_boundary_line(int4 row, __global const int *table,
                                 __global const double4 *crd, __global const float4 *inflow,
                                 float8 line, int group_end_at, int slip_at, int inflow_at,
                                 double slip_sine) {
#pragma OPENCL FP_CONTRACT OFF
    __global const int4 *triangles = (__global const int4 *)table;
    // The inflow flux: per inflow triangle, mean(inflow) · (area normal) / 3.
    double flux = 0.0;
    for (int k = row.z; k < row.w; k++) {
        const int4 nodes = triangles[table[inflow_at + k]];
        double3 mean = (double3)(0.0);
        mean += convert_double3(inflow[nodes.x].xyz);
        mean += convert_double3(inflow[nodes.y].xyz);
        mean += convert_double3(inflow[nodes.z].xyz);
        mean = mean / 3.0;
        flux += wind_dot(mean, wind_area_normal(crd, nodes)) / 3.0;
    }
    double p[6] = {1.0, 0.0, 0.0, 1.0, 0.0, 1.0};
    if (row.w > row.z) {
        for (int k = 0; k < 6; k++) p[k] = 0.0;
    } else {
        // `slip_projector`: Gram-Schmidt over the groups' normalised sums.
        double3 basis[3];
        int count = 0;
        for (int g = row.x; g < row.y && count < 3; g++) {
            const int first = g == 0 ? 0 : table[group_end_at + g - 1];
            const int end = table[group_end_at + g];
            double3 sum = (double3)(0.0);
            for (int k = first; k < end; k++)
                sum += wind_area_normal(crd, triangles[table[slip_at + k]]);
            // glam's `try_normalize`.
            const double rcp = 1.0 / sqrt(wind_dot(sum, sum));
            if (!(isfinite(rcp) && rcp > 0.0)) continue;
            double3 n = sum * rcp;
            for (int b = 0; b < count; b++) n -= basis[b] * wind_dot(basis[b], n);
            if (sqrt(wind_dot(n, n)) < slip_sine) continue;
            basis[count++] = n * (1.0 / sqrt(wind_dot(n, n)));
        }
        if (count == 3) {
            for (int k = 0; k < 6; k++) p[k] = 0.0;
        } else {
            for (int b = 0; b < count; b++) {
                const double3 e = basis[b];
                p[0] -= e.x * e.x;
                p[1] -= e.x * e.y;
                p[2] -= e.x * e.z;
                p[3] -= e.y * e.y;
                p[4] -= e.y * e.z;
                p[5] -= e.z * e.z;
            }
        }
    }
    line.s0 = (float)p[0];
    line.s1 = (float)p[1];
    line.s2 = (float)p[2];
    line.s3 = (float)p[3];
    line.s4 = (float)p[4];
    line.s5 = (float)p[5];
    line.s7 = (float)flux;
    return line;
}
