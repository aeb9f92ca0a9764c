// Laying a landed parcel on the cover (src/snow/cover.rs, src/snow/refine.rs): its snow is
// spread over a footprint on the ground, a disk of radius R around the landing point, by the
// 7-point degree-3 cubature of the disk (Radon): a quarter at the centre and an eighth at each
// of six points at sqrt(2/3) R, rotated by an angle drawn for the landing. Each point is
// located on the coarse ground (a walk over its triangles in the horizontal plane, from the
// triangle landed on; a point beyond the ground's edge is replaced by the opposite one, or
// failing that by the centre, so the edge gets no more than its share) and its share goes
// to the three vertices of the fine triangle it falls in, by its barycentrics, in integer
// units: q0 = rint(w0 u), q1 = min(rint(w1 u), u − q0), q2 = u − q0 − q1. So a landing lays
// exactly its units, whatever the footprint, and 64-bit atomic adds make the order of
// landings irrelevant. Built after tet_walk.cl, before snow.cl.

#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable

#define DEPOSIT_HOPS 64

// The coarse ground's tables (src/snow/cover.rs, LandingLinks).
typedef struct {
    __global const int4 *tris;          // ground vertex ids of each coarse triangle
    __global const int4 *adjacent;      // the triangle across the edge opposite vertex k
    __global const float2 *xy;          // horizontal position of each coarse vertex
    __global const uint *around_offsets; // per coarse vertex, its triangles in `around`
    __global const uint *around;
    __global const uint *lattice;       // per coarse triangle, fine ids of its lattice points
    uint r;                             // pieces per coarse edge
} DepositLinks;

inline int deposit_lane(int4 v, int k) { return k == 0 ? v.x : k == 1 ? v.y : v.z; }

// The coarse triangle with ground vertices g0, g1 and g2; −1 if there is none.
inline int deposit_triangle(const DepositLinks *l, int g0, int g1, int g2) {
    for (uint k = l->around_offsets[g0]; k < l->around_offsets[g0 + 1]; k++) {
        const int t = (int)l->around[k];
        const int4 v = l->tris[t];
        const int has1 = v.x == g1 || v.y == g1 || v.z == g1;
        const int has2 = v.x == g2 || v.y == g2 || v.z == g2;
        if (has1 && has2)
            return t;
    }
    return -1;
}

// Horizontal barycentrics of p in coarse triangle t, relative to its first vertex; a
// triangle with no horizontal extent gives its centre.
inline float3 deposit_bary(const DepositLinks *l, int t, float2 p) {
    const int4 v = l->tris[t];
    const float2 a = l->xy[v.x];
    const float2 e1 = l->xy[v.y] - a, e2 = l->xy[v.z] - a, q = p - a;
    const float det = e1.x * e2.y - e1.y * e2.x;
    if (!(fabs(det) > 0.0f))
        return (float3)(1.0f / 3.0f);
    const float l1 = (q.x * e2.y - q.y * e2.x) / det;
    const float l2 = (e1.x * q.y - e1.y * q.x) / det;
    return (float3)(1.0f - l1 - l2, l1, l2);
}

inline float3 deposit_clamped(float3 b) {
    b = fmax(b, 0.0f);
    const float s = b.x + b.y + b.z;
    return s > 0.0f ? b / s : (float3)(1.0f / 3.0f);
}

// The coarse triangle holding p, walking from t across the edge of the most negative
// barycentric, with p's barycentrics in *bary; −1 when p lies beyond the ground's edge or
// the walk runs out of hops.
inline int deposit_locate(const DepositLinks *l, int t, float2 p, float3 *bary) {
    for (int hop = 0; hop < DEPOSIT_HOPS; hop++) {
        const float3 b = deposit_bary(l, t, p);
        const int k = (b.x <= b.y && b.x <= b.z) ? 0 : (b.y <= b.z ? 1 : 2);
        const float m = k == 0 ? b.x : k == 1 ? b.y : b.z;
        if (m >= -1e-6f) {
            *bary = deposit_clamped(b);
            return t;
        }
        const int next = deposit_lane(l->adjacent[t], k);
        if (next < 0)
            return -1;
        t = next;
    }
    return -1;
}

inline uint deposit_index(uint r, uint i, uint j) { return j * (r + 1u) - j * (j - (j > 0u)) / 2u + i; }

// Adds `units` at barycentrics b of coarse triangle t: to the three vertices of the fine
// triangle b falls in, split by its barycentrics there.
inline void deposit_fine(const DepositLinks *l, __global ulong *volume, int t, float3 b,
                         ulong units) {
    const uint r = l->r;
    const float fr = (float)r;
    const float A = clamp(b.y * fr, 0.0f, fr);
    const float B = clamp(b.z * fr, 0.0f, fr - A);
    const uint i = min((uint)A, r - 1u);
    const uint j = min((uint)B, r - 1u - i);
    const float u = A - (float)i, v = B - (float)j;
    uint p0, p1, p2;
    float w0, w1, w2;
    if (u + v > 1.0f && i + j + 2u <= r) {
        p0 = deposit_index(r, i + 1u, j + 1u);
        p1 = deposit_index(r, i, j + 1u);
        p2 = deposit_index(r, i + 1u, j);
        w0 = u + v - 1.0f;
        w1 = 1.0f - u;
        w2 = 1.0f - v;
    } else {
        p0 = deposit_index(r, i, j);
        p1 = deposit_index(r, i + 1u, j);
        p2 = deposit_index(r, i, j + 1u);
        w0 = 1.0f - u - v;
        w1 = u;
        w2 = v;
    }
    const float3 w = deposit_clamped((float3)(w0, w1, w2));
    const float U = (float)units;
    const ulong q0 = min((ulong)rint(w.x * U), units);
    const ulong q1 = min((ulong)rint(w.y * U), units - q0);
    const ulong q2 = units - q0 - q1;
    const uint base = (uint)t * ((r + 1u) * (r + 2u) / 2u);
    atom_add(&volume[l->lattice[base + p0]], q0);
    atom_add(&volume[l->lattice[base + p1]], q1);
    atom_add(&volume[l->lattice[base + p2]], q2);
}

// Lays `units` landed at horizontal point x on the ground face of ground vertices g0, g1, g2
// over a disk of `radius` metres turned by `angle`. Returns 0 (nothing laid) when the face
// is not a triangle of the coarse ground.
inline int deposit_parcel(const DepositLinks *l, __global ulong *volume, int g0, int g1, int g2,
                          float2 x, float radius, float angle, ulong units) {
    const int t0 = deposit_triangle(l, g0, g1, g2);
    if (t0 < 0)
        return 0;
    const ulong ring = radius > 0.0f ? units / 8ul : 0ul;
    float3 bc;
    int tc = deposit_locate(l, t0, x, &bc);
    if (tc < 0) {
        // The crossing point itself, a hair outside its triangle in the plane: its nearest.
        tc = t0;
        bc = deposit_clamped(deposit_bary(l, t0, x));
    }
    // A ring point beyond the ground's edge takes the opposite one's place (so a footprint
    // cut by the edge stays centred where the parcel landed), else the centre's.
    ulong centre = units - 6ul * ring;
    if (ring > 0ul) {
        const float rho = 0.81649658f * radius; // sqrt(2/3) R
        for (int k = 0; k < 6; k++) {
            const float a = angle + (float)k * 1.04719755f;
            const float2 d = rho * (float2)(cos(a), sin(a));
            float3 b;
            int t = deposit_locate(l, tc, x + d, &b);
            if (t < 0)
                t = deposit_locate(l, tc, x - d, &b);
            if (t < 0)
                centre += ring;
            else
                deposit_fine(l, volume, t, b, ring);
        }
    }
    deposit_fine(l, volume, tc, bc, centre);
    return 1;
}
