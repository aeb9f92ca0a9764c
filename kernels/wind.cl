// Helpers of the wind's gml kernels (src/wind/kernels.rs), pasted before each of them after
// kernels/tet_walk.cl.

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
