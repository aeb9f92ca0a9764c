// Point location in a tetrahedral mesh by a barycentric walk through face neighbours, shared by
// the wind's advection and the snow's particles.
//
// Mesh layout: `tets[t]` the four vertex indices of tetrahedron t (w the fourth), `coords[v]`
// the vertex coordinates in metres (xyz), `neighbours[t]` the tetrahedron across the face
// opposite local vertex j (component j), -1 on the domain boundary.
//
// The inside test is in metres: q is inside t when its signed distance to each face plane is
// at least -tolerance (the distances are computed from coordinates relative to t's first
// vertex, so f32 world coordinates of a few kilometres lose nothing that matters). From an
// outside t the walk crosses the face q is furthest beyond; where q is beyond several faces,
// a hash of (seed, hop) picks among them and the walk never steps straight back to where it
// came from, so it cannot cycle forever on a non-Delaunay mesh (a stochastic, remembering walk).

#ifndef TET_WALK_CL
#define TET_WALK_CL

// The walk reached q: q is inside `tet` (within the tolerance).
#define TET_WALK_INSIDE 0
// q is outside the domain: `tet` is the last tetrahedron, `face` the boundary face it would
// leave through, and `bary` the barycentrics clamped onto the tetrahedron (negative ones set
// to zero, the rest renormalised).
#define TET_WALK_OUTSIDE 1
// The hop limit was reached first: `tet` is where the walk stopped, `bary` clamped as above.
#define TET_WALK_LOST 2

typedef struct {
    int tet;
    int status;
    int hops;
    int face;
    float4 bary;
} TetWalk;

// A 32-bit integer hash (lowbias32), for the walk's choices.
inline uint tet_walk_hash(uint x) {
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

// Signed distances (metres, positive inside) of q to the four face planes of t, face j being
// opposite local vertex j, and the heights of each vertex above its opposite face.
inline void tet_walk_distances(__global const int4 *tets, __global const float4 *coords, int t,
                               float3 q, float4 *distance, float4 *height) {
    const int4 n = tets[t];
    const float3 a = coords[n.x].xyz;
    const float3 e1 = coords[n.y].xyz - a;
    const float3 e2 = coords[n.z].xyz - a;
    const float3 e3 = coords[n.w].xyz - a;
    const float3 r = q - a;
    // Face normals, pointing towards the opposite vertex for a positively oriented tetrahedron;
    // the orientation factor makes them point inwards either way.
    float3 n0 = cross(e3 - e1, e2 - e1);
    float3 n1 = cross(e2, e3);
    float3 n2 = cross(e3, e1);
    float3 n3 = cross(e1, e2);
    const float orient = dot(cross(e1, e2), e3) >= 0.0f ? 1.0f : -1.0f;
    n0 *= orient * rsqrt(dot(n0, n0));
    n1 *= orient * rsqrt(dot(n1, n1));
    n2 *= orient * rsqrt(dot(n2, n2));
    n3 *= orient * rsqrt(dot(n3, n3));
    *distance = (float4)(dot(r - e1, n0), dot(r, n1), dot(r, n2), dot(r, n3));
    *height = (float4)(dot(-e1, n0), dot(e1, n1), dot(e2, n2), dot(e3, n3));
}

// Barycentrics from distances and heights, negative ones clamped to zero and renormalised.
inline float4 tet_walk_clamped(float4 distance, float4 height) {
    float4 b = fmax(distance / height, 0.0f);
    const float s = b.x + b.y + b.z + b.w;
    return s > 0.0f ? b / s : (float4)(0.25f);
}

// Walks from tetrahedron `start` towards q, for at most `max_hops` steps.
inline TetWalk tet_walk(__global const int4 *tets, __global const float4 *coords,
                        __global const int4 *neighbours, int start, float3 q, float tolerance,
                        int max_hops, uint seed) {
    TetWalk w;
    w.tet = start;
    w.face = -1;
    int previous = -1;
    for (w.hops = 0;; w.hops++) {
        float4 d, h;
        tet_walk_distances(tets, coords, w.tet, q, &d, &h);
        const int4 outside = d < (float4)(-tolerance);
        if (!any(outside)) {
            w.status = TET_WALK_INSIDE;
            w.bary = tet_walk_clamped(d, h);
            return w;
        }
        const int4 ngb = neighbours[w.tet];
        // Candidate faces: beyond them, and not straight back.
        float best = 0.0f;
        int face = -1;
        int count = 0;
        const uint pick = tet_walk_hash(seed ^ (uint)(w.hops * 0x9e3779b9U));
        for (int j = 0; j < 4; j++) {
            const float dj = j == 0 ? d.x : j == 1 ? d.y : j == 2 ? d.z : d.w;
            const int nj = j == 0 ? ngb.x : j == 1 ? ngb.y : j == 2 ? ngb.z : ngb.w;
            if (dj >= -tolerance || (nj == previous && nj >= 0)) continue;
            count++;
            // The furthest-beyond face first; ties and the rest broken by the hash so that
            // repeated visits do not repeat the same choice.
            const float score = dj * (1.0f + 0.25f * (float)((pick >> (8 * j)) & 255U) / 255.0f);
            if (face < 0 || score < best) {
                best = score;
                face = j;
            }
        }
        if (count == 0) {
            // Only the way back remains: take it (the hash changes the next choice).
            for (int j = 0; j < 4; j++) {
                const float dj = j == 0 ? d.x : j == 1 ? d.y : j == 2 ? d.z : d.w;
                if (dj < -tolerance) face = j;
            }
        }
        const int next = face == 0 ? ngb.x : face == 1 ? ngb.y : face == 2 ? ngb.z : ngb.w;
        if (next < 0) {
            w.status = TET_WALK_OUTSIDE;
            w.face = face;
            w.bary = tet_walk_clamped(d, h);
            return w;
        }
        if (w.hops >= max_hops) {
            w.status = TET_WALK_LOST;
            w.bary = tet_walk_clamped(d, h);
            return w;
        }
        previous = w.tet;
        w.tet = next;
    }
}

#endif
