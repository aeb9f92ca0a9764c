// Helpers of the ground refresh's gml kernels (src/wind/refresh.rs), pasted before each
// kernel compiled after the first refresh, after kernels/wind.cl.
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
