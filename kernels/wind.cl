// Helpers of the wind's gml kernels (src/wind/kernels.rs), pasted before each of them after
// kernels/tet_walk.cl. The pressure solve computes in double (its parameter struct holds
// doubles), so every wind kernel enables fp64.

#pragma OPENCL EXTENSION cl_khr_fp64 : enable

// Vertex flags (src/wind/boundary.rs).
#define WIND_FIXED_VELOCITY 1
#define WIND_FIXED_PRESSURE 2

// The symmetric projector stored in b.s012345 (xx, xy, xz, yy, yz, zz) applied to v.xyz.
inline float4 wind_project(float8 b, float4 v) {
    return (float4)(b.s0 * v.x + b.s1 * v.y + b.s2 * v.z,
                    b.s1 * v.x + b.s3 * v.y + b.s4 * v.z,
                    b.s2 * v.x + b.s4 * v.y + b.s5 * v.z, 0.0f);
}

// Component `k` (0..3) of v, without a branch per lane.
inline float wind_pick(float4 v, int k) {
    return k == 0 ? v.x : k == 1 ? v.y : k == 2 ? v.z : v.w;
}

// wind_project for a double vector (the pressure solve's gradients).
inline double4 wind_project_d(float8 b, double4 v) {
    const double8 d = convert_double8(b);
    return (double4)(d.s0 * v.x + d.s1 * v.y + d.s2 * v.z,
                     d.s1 * v.x + d.s3 * v.y + d.s4 * v.z,
                     d.s2 * v.x + d.s4 * v.y + d.s5 * v.z, 0.0);
}
