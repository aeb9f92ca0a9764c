// Snow particles: initial spread, one time step (drag toward the wind, gravity, flutter, point
// location, landing, wrap-around, respawn) and the render pack. Built after tet_walk.cl.
//
// Coordinates: x east, y north, z up, metres. Particle state, one slot per particle, every
// array kept in the sort's order (the tetrahedra sorted as keys, the rest by snow_permute;
// src/snow/particles.rs):
//   pos[i]     xyz position, w flutter phase (radians, [0, 2π))
//   vel[i]     xyz velocity (m/s), w drag coefficient k (1/m): a = k |w − v| (w − v) − g ẑ
//   tet[i]     the tetrahedron that contains pos (within the walk's tolerance)
//   ids[i]     the particle's id (0 .. n − 1, never changes)
//   respawns[i] how many times it respawned (the generator's counter)
//   suspended[i] units of laid snow the wind lifted into it (snow_suspend.cl), laid with its
//              own parcel when it lands; only with `suspend` (one unused entry without)
//
// Every random number is a pure function of (seed, id, respawn count, stream): never of the
// array slot, the frame or a shared counter, so permuting the arrays changes nothing. What
// depends on (seed, id) alone, the flutter and the flake's size, is not stored but derived
// where it is needed (snow_flutter): 16 bytes a parcel fewer for every step to read and every
// sort to move.
//
// Mesh (src/snow/mesh.rs): tets, coords and neighbours as tet_walk.cl; face_refs[t].j the
// boundary reference of face j (opposite local vertex j) when it is on the boundary, 0 inside;
// ground_index[v] the ground-surface vertex of volume vertex v, −1 off the ground.
//
// Counters (ulong, cumulative, 64-bit atomics, never read back into particle state): see
// SNOW_C_*; `first_bad` the smallest id of a particle whose state became non-finite.

#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable

#define SNOW_C_LANDED 0
#define SNOW_C_TOP 1
#define SNOW_C_WRAPPED 2
#define SNOW_C_CLOSED 3
#define SNOW_C_LOST 4
#define SNOW_C_NONFINITE 5
#define SNOW_C_OTHER 6
#define SNOW_C_DEPOSIT 7
#define SNOW_C_LAID_SUSPENDED 8
#define SNOW_C_EXIT_SUSPENDED 9

#define SNOW_TWO_PI 6.28318530717958647692f

// Generator streams: which of a particle's random numbers is drawn.
#define SNOW_S_TET 0u
#define SNOW_S_POINT 1u
#define SNOW_S_FLUTTER 8u
#define SNOW_S_TOP 16u
#define SNOW_S_WALK 24u
#define SNOW_S_FOOTPRINT 32u
#define SNOW_S_SOURCE 40u

// A counter-based generator: 32 random bits for (seed, id, count, stream), a chain of
// lowbias32 hashes with an odd constant between the words so that no two keys collide by
// exchange.
inline uint snow_bits(uint seed, uint id, uint count, uint stream) {
    uint h = tet_walk_hash(seed ^ 0x68e31da4U);
    h = tet_walk_hash(h + id * 0x9e3779b9U);
    h = tet_walk_hash(h ^ (count * 0x85ebca6bU + 0x27d4eb2fU));
    h = tet_walk_hash(h + stream * 0xc2b2ae35U);
    return h;
}

// Stratified by id: a 32-bit fraction uniform in [id / n, (id + 1) / n) for the random bits
// `bits`, so that n particles draw one point from each of n equal strata of a distribution
// (its cumulative table), not n independent points: no region gets more or fewer particles
// than its share, give or take one, and the sampling noise of what they carry drops from
// Poisson's. Needs id < n.
inline uint snow_stratum(uint id, uint n, uint bits) {
    return (uint)((((ulong)id << 32) | (ulong)bits) / (ulong)n);
}

// Uniform in [0, 1) with 24 bits.
inline float snow_unit(uint bits) { return (float)(bits >> 8) * (1.0f / 16777216.0f); }

// Uniform in (0, 1].
inline float snow_unit_open(uint bits) { return ((float)(bits >> 8) + 1.0f) * (1.0f / 16777216.0f); }

// First index i in [0, n) with u < cdf[i] (cdf ascending, last entry 0xffffffff).
inline int snow_search(__global const uint *cdf, int n, uint u) {
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        const int mid = (lo + hi) >> 1;
        if (u < cdf[mid])
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

// The wind at barycentrics b of tetrahedron t (per-vertex velocities, linear).
inline float3 snow_wind(__global const int4 *tets, __global const float4 *wind, int t, float4 b) {
    const int4 n = tets[t];
    return b.x * wind[n.x].xyz + b.y * wind[n.y].xyz + b.z * wind[n.z].xyz + b.w * wind[n.w].xyz;
}

inline float snow_lane(float4 v, int j) { return j == 0 ? v.x : j == 1 ? v.y : j == 2 ? v.z : v.w; }
inline int snow_ilane(int4 v, int j) { return j == 0 ? v.x : j == 1 ? v.y : j == 2 ? v.z : v.w; }

// A tetrahedron's four face planes, lane j for the face opposite local vertex j: the signed
// distance (m, positive inside) of q is nx·r.x + ny·r.y + nz·r.z + off with r = q − a (a its
// first vertex, so f32 keeps the precision of the tetrahedron's own size), and `height` the
// distance of each vertex from its opposite face. Computed once per tetrahedron visited and
// used for every point tested in it (the particle, its new position, the wind's barycentrics).
typedef struct {
    float3 a;
    float4 nx, ny, nz, off, height;
} SnowTet;

inline SnowTet snow_tet(__global const int4 *tets, __global const float4 *coords, int t) {
    const int4 n = tets[t];
    SnowTet s;
    s.a = coords[n.x].xyz;
    const float3 e1 = coords[n.y].xyz - s.a;
    const float3 e2 = coords[n.z].xyz - s.a;
    const float3 e3 = coords[n.w].xyz - s.a;
    const float orient = dot(cross(e1, e2), e3) >= 0.0f ? 1.0f : -1.0f;
    float3 n0 = cross(e3 - e1, e2 - e1);
    float3 n1 = cross(e2, e3);
    float3 n2 = cross(e3, e1);
    float3 n3 = cross(e1, e2);
    n0 *= orient * rsqrt(dot(n0, n0));
    n1 *= orient * rsqrt(dot(n1, n1));
    n2 *= orient * rsqrt(dot(n2, n2));
    n3 *= orient * rsqrt(dot(n3, n3));
    s.nx = (float4)(n0.x, n1.x, n2.x, n3.x);
    s.ny = (float4)(n0.y, n1.y, n2.y, n3.y);
    s.nz = (float4)(n0.z, n1.z, n2.z, n3.z);
    s.off = (float4)(-dot(e1, n0), 0.0f, 0.0f, 0.0f);
    s.height = (float4)(-dot(e1, n0), dot(e1, n1), dot(e2, n2), dot(e3, n3));
    return s;
}

inline float4 snow_dist(const SnowTet *s, float3 q) {
    const float3 r = q - s->a;
    return s->nx * r.x + s->ny * r.y + s->nz * r.z + s->off;
}

// Result of following the segment p → q through the mesh.
typedef struct {
    int tet;    // where the walk ended
    int status; // TET_WALK_INSIDE: q is in tet; TET_WALK_OUTSIDE: the segment leaves the
                // domain through face `face` of tet at parameter s; TET_WALK_LOST: hop limit
    int face;
    float s;
} SnowSegment;

// Follows the segment p → q from tetrahedron t (which holds p within the tolerance): in each
// tetrahedron, among the faces q is beyond, the segment leaves through the one it reaches
// first (smallest crossing parameter). So a landing is a crossing of a ground face by the
// segment itself, never a greedy walk's guess near concave ground.
// `first` holds the planes of t, already computed by the caller.
inline SnowSegment snow_segment(__global const int4 *tets, __global const float4 *coords,
                                __global const int4 *neighbours, int t, const SnowTet *first,
                                float3 p, float3 q, float tolerance, int max_hops) {
    SnowSegment r;
    r.tet = t;
    r.face = -1;
    r.s = 1.0f;
    SnowTet here = *first;
    for (int hop = 0; hop <= max_hops; hop++) {
        if (hop > 0)
            here = snow_tet(tets, coords, r.tet);
        const float4 dp = snow_dist(&here, p);
        const float4 dq = snow_dist(&here, q);
        int face = -1;
        float best = 2.0f;
        for (int j = 0; j < 4; j++) {
            const float a = fmax(snow_lane(dp, j), 0.0f);
            const float b = snow_lane(dq, j);
            if (b >= -tolerance)
                continue;
            const float s = a / (a - b);
            if (s < best) {
                best = s;
                face = j;
            }
        }
        if (face < 0) {
            r.status = TET_WALK_INSIDE;
            return r;
        }
        const int next = snow_ilane(neighbours[r.tet], face);
        if (next < 0) {
            r.status = TET_WALK_OUTSIDE;
            r.face = face;
            r.s = best;
            return r;
        }
        r.tet = next;
    }
    r.status = TET_WALK_LOST;
    return r;
}

// The point at area fraction w (32 bits) of the triangle a + s (b − a) + t (c − a), along its
// recursive split into four (the corner at a, at b, at c, the inverted middle: two bits of w a
// level): equal ranges of w map to equal areas, and a short range of w to one small triangle,
// so points stratified in w are stratified in the triangle too. Relative to a, so the sum
// keeps the precision of the triangle's own size.
inline float3 snow_triangle_point(float3 a, float3 b, float3 c, uint w) {
    float2 o = (float2)(0.0f, 0.0f), e1 = (float2)(1.0f, 0.0f), e2 = (float2)(0.0f, 1.0f);
    for (int level = 0; level < 16; level++) {
        const uint d = w >> 30;
        w <<= 2;
        e1 *= 0.5f;
        e2 *= 0.5f;
        if (d == 1u) {
            o += e1;
        } else if (d == 2u) {
            o += e2;
        } else if (d == 3u) {
            o += e1 + e2;
            e1 = -e1;
            e2 = -e2;
        }
    }
    const float2 st = o + (e1 + e2) * (1.0f / 3.0f);
    return a + st.x * (b - a) + st.y * (c - a);
}

// The triangle of an area table `cdf` (count entries) that the 32-bit fraction u falls in, and
// in *w u's place within that triangle's share of the table, as a 32-bit fraction (what
// snow_triangle_point maps into the triangle).
inline int snow_stratum_triangle(__global const uint *cdf, int count, uint u, uint *w) {
    const int k = snow_search(cdf, count, u);
    const ulong lo = k > 0 ? (ulong)cdf[k - 1] : 0ul;
    const ulong hi = (ulong)cdf[k] + (k == count - 1 ? 1ul : 0ul);
    *w = hi > lo ? (uint)min((((ulong)u - lo) << 32) / (hi - lo), (ulong)0xffffffffU) : 0u;
    return k;
}

// The point of the top face for a particle's respawn number `count`: from the particle's own
// stratum of the top's area table (so the n particles share the top evenly), its triangle and
// the point at the stratum's fraction of that triangle's area, lowered by `below` metres into
// the tetrahedron under it. The point within the stratum is drawn afresh at every respawn.
inline float3 snow_top_point(__global const int4 *top_tris, __global const uint *top_cdf,
                             int top_count, __global const float4 *coords, uint seed, uint id,
                             uint n, uint count, float below, int *tet) {
    uint w;
    const int k = snow_stratum_triangle(top_cdf, top_count,
                                        snow_stratum(id, n, snow_bits(seed, id, count, SNOW_S_TOP)), &w);
    const int4 tri = top_tris[k];
    float3 x = snow_triangle_point(coords[tri.x].xyz, coords[tri.y].xyz, coords[tri.z].xyz, w);
    x.z -= below;
    *tet = tri.w;
    return x;
}

// The snow's source (snow.source_height > 0): the point `height` metres over the ground point
// at the particle's stratum of the ground's horizontal area table (its triangle, then the point
// at the stratum's fraction of the triangle's area), no higher than `top` less `below`;
// located by a walk from the tetrahedron on that ground triangle. Returns that tetrahedron, or
// −1 where the walk does not reach the point (the caller falls back to the top).
inline int snow_source_point(__global const int4 *tets, __global const float4 *coords,
                             __global const int4 *neighbours, __global const uint *ground_cdf,
                             int ground_count, __global const int *ground_tets,
                             __global const int4 *ground_tris,
                             __global const float4 *ground_points, uint seed, uint id, uint n,
                             uint count, float height, float top, float below, float tol,
                             int hops, float3 *x) {
    uint w;
    const int k = snow_stratum_triangle(
        ground_cdf, ground_count, snow_stratum(id, n, snow_bits(seed, id, count, SNOW_S_SOURCE)), &w);
    const int4 tri = ground_tris[k];
    float3 p = snow_triangle_point(ground_points[tri.x].xyz, ground_points[tri.y].xyz,
                                   ground_points[tri.z].xyz, w);
    p.z = fmin(p.z + height, top - below);
    const TetWalk wk = tet_walk(tets, coords, neighbours, ground_tets[k], p, tol, hops,
                                snow_bits(seed, id, count, SNOW_S_SOURCE + 1u));
    *x = p;
    return wk.status == TET_WALK_INSIDE ? wk.tet : -1;
}

// A parcel's flutter and flake size, a pure function of (seed, id) and the scene's ranges:
// flutter_range = (radius min, max (m), rate min, max (rad/s)); size_law = (smallest
// diameter, largest, reference diameter, reference fall speed): v_t(d) = v_ref (d / d_ref)^0.2,
// the diameter from a rank-1 lattice in the ids (see snow_init). Returns (flutter radius m,
// flutter rate rad/s, diameter m, terminal fall speed in still air m/s).
inline float4 snow_flutter(uint seed, uint id, float4 flutter_range, float4 size_law) {
    const float radius = mix(flutter_range.x, flutter_range.y,
                             snow_unit(snow_bits(seed, id, 0u, SNOW_S_FLUTTER)));
    const float rate = mix(flutter_range.z, flutter_range.w,
                           snow_unit(snow_bits(seed, id, 0u, SNOW_S_FLUTTER + 1u)));
    const uint lattice_d = id * 0x91e10da5U + snow_bits(seed, 0u, 0u, SNOW_S_SOURCE + 3u);
    const float d = mix(size_law.x, size_law.y, snow_unit(lattice_d));
    const float vt = size_law.w * pow(d / size_law.z, 0.2f);
    return (float4)(radius, rate, d, vt);
}

// Spreads the n particles uniformly through the air (a tetrahedron chosen by volume from the
// particle's own stratum, a point uniform in it: Dirichlet(1,1,1,1) barycentrics from four
// exponentials), or, with a source height (source.x > 0), through the air below it: over the
// ground point of the particle's stratum, at a height from a rank-1 lattice in the ids. At
// rest, with their flutter phase drawn from the generator (radius, rate and size: snow_flutter).
// source = (height, top, respawn depth below the top, tolerance); hops the walk's limit.
__kernel void snow_init(__global float4 *restrict pos, __global float4 *restrict vel,
                        __global uint *restrict tet,
                        __global uint *restrict ids, __global uint *restrict respawns,
                        __global float4 *restrict render, const uint n, const uint seed,
                        const uint first, const uint total,
                        __global const int4 *restrict tets, __global const float4 *restrict coords,
                        __global const uint *restrict tet_cdf, const int tet_count,
                        const float4 flutter_range, const float4 size_law, const float gravity,
                        const float render_scale, __global const int4 *restrict neighbours,
                        __global const uint *restrict ground_cdf, const int ground_count,
                        __global const int *restrict ground_tets,
                        __global const int4 *restrict ground_tris,
                        __global const float4 *restrict ground_points, const float4 source,
                        const int hops) {
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    // Ids are global: a device holding a share of the parcels holds ids first..first + n,
    // and the strata are the whole run's (`total`), so a parcel starts where it would on one
    // device.
    const uint id = first + i;
    int t = -1;
    float3 x;
    // Height and size from a rank-1 lattice in the ids (Roberts's R2 sequence: frac(id / g),
    // frac(id / g²), g the plastic number, in 32-bit fixed point), turned by the seed: with the
    // ground position stratified by id, the particles are stratified in position, height and
    // fall speed together, so where they land is no lottery.
    const uint lattice_h = id * 0x9e3779b9U + snow_bits(seed, 0u, 0u, SNOW_S_SOURCE + 2u);
    if (source.x > 0.0f) {
        const float h = source.x * snow_unit(lattice_h);
        t = snow_source_point(tets, coords, neighbours, ground_cdf, ground_count, ground_tets,
                              ground_tris, ground_points, seed, id, total, 0u, h, source.y, source.z,
                              source.w, hops, &x);
    }
    if (t < 0) {
        t = snow_search(tet_cdf, tet_count, snow_stratum(id, total, snow_bits(seed, id, 0u, SNOW_S_TET)));
        float4 e;
        e.x = -log(snow_unit_open(snow_bits(seed, id, 0u, SNOW_S_POINT)));
        e.y = -log(snow_unit_open(snow_bits(seed, id, 0u, SNOW_S_POINT + 1u)));
        e.z = -log(snow_unit_open(snow_bits(seed, id, 0u, SNOW_S_POINT + 2u)));
        e.w = -log(snow_unit_open(snow_bits(seed, id, 0u, SNOW_S_POINT + 3u)));
        const float4 b = e / (e.x + e.y + e.z + e.w);
        const int4 nd = tets[t];
        const float3 a = coords[nd.x].xyz;
        x = a + b.y * (coords[nd.y].xyz - a) + b.z * (coords[nd.z].xyz - a) +
            b.w * (coords[nd.w].xyz - a);
    }
    const float phase = SNOW_TWO_PI * snow_unit(snow_bits(seed, id, 0u, SNOW_S_FLUTTER + 2u));
    // k = g / v_t².
    const float4 f = snow_flutter(seed, id, flutter_range, size_law);
    const float d = f.z, vt = f.w;
    pos[i] = (float4)(x, phase);
    vel[i] = (float4)(0.0f, 0.0f, 0.0f, gravity / (vt * vt));
    tet[i] = (uint)t;
    ids[i] = id;
    respawns[i] = 0u;
    render[i] = (float4)(x, 0.5f * d * render_scale);
}

// The suspension's cell of a parcel at xy in tetrahedron t: the ground vertex of t nearest to
// it horizontally (a tetrahedron of the bottom layer touches the ground by a face, an edge or a
// vertex; ties to the lower id), −1 above the bottom layer. Without contraction into fused
// multiply-adds, so that the same position and tetrahedron give the same cell at the end of a
// step, when the parcel is counted, and at the start of the next, when it takes its share.
inline int snow_bottom_cell(__global const int4 *restrict tets,
                            __global const float4 *restrict coords,
                            __global const int *restrict ground_index, const int t,
                            const float2 xy) {
#pragma OPENCL FP_CONTRACT OFF
    const int4 nd = tets[t];
    const int vs[4] = {nd.x, nd.y, nd.z, nd.w};
    int c = -1;
    float best = 0.0f;
    for (int k = 0; k < 4; k++) {
        const int g = ground_index[vs[k]];
        if (g < 0)
            continue;
        const float2 d = coords[vs[k]].xy - xy;
        const float dx2 = d.x * d.x;
        const float dy2 = d.y * d.y;
        const float r2 = dx2 + dy2;
        if (c < 0 || r2 < best || (r2 == best && g < c)) {
            c = g;
            best = r2;
        }
    }
    return c;
}

// One step of dt seconds for every particle. params = (dt, gravity, tolerance m, respawn depth
// m); box = (x min, y min, x max, y max) of the periodic sides; refs = (x_min, x_max, y_min,
// y_max) and refs2 = (ground, top, local hop limit, global hop limit). A landing lays
// `landing_units` on the cover (snow_deposit.cl) over a disk of radius `footprint` plus the
// particle's flutter radius. A respawn enters at the source (source = (height, top, depth
// below the top, unused); height 0: through the top).
// With `suspend` (snow_suspend.cl): a parcel in the bottom layer first takes its share of the
// units the wind lifted in its cell this frame (`cell_pool` over `cell_count` parcels, the
// remainder to the cell's smallest id, counted at the end of the last step; cells:
// snow_bottom_cell), carries them, and
// lays them with its own parcel when it lands (or takes them out of the domain when it
// leaves); at the end every parcel in the bottom layer (`bottom[t]`: its tetrahedron touches
// the ground) is counted in its cell for the next frame (`next_count`, `next_first`).
// flutter_range and size_law as snow_flutter takes them; the parcel as drawn goes to
// render[i] only when write_render (0 where nothing draws the parcels).
__kernel void snow_step(__global float4 *restrict pos, __global float4 *restrict vel,
                        __global uint *restrict tet,
                        __global const uint *restrict ids, __global uint *restrict respawns,
                        __global float4 *restrict render, const uint n, const uint seed,
                        const uint first, const uint total,
                        __global const int4 *restrict tets, __global const float4 *restrict coords,
                        __global const int4 *restrict neighbours,
                        __global const int4 *restrict face_refs,
                        __global const int *restrict ground_index,
                        __global const int4 *restrict top_tris,
                        __global const uint *restrict top_cdf, const int top_count,
                        __global const int *restrict columns, const int4 column_dims,
                        const float4 column_map, __global const float4 *restrict wind,
                        __global ulong *restrict deposit, __global ulong *restrict counters,
                        __global uint *restrict first_bad,
                        const float4 params, const float4 box, const int4 refs,
                        const int4 refs2, const ulong landing_units, const float render_scale,
                        __global const int4 *restrict cover_tris,
                        __global const int4 *restrict cover_adjacent,
                        __global const float2 *restrict cover_xy,
                        __global const uint *restrict cover_around_offsets,
                        __global const uint *restrict cover_around,
                        __global const uint *restrict cover_lattice, const uint cover_r,
                        const float footprint, __global const uint *restrict ground_cdf,
                        const int ground_count, __global const int *restrict ground_tets,
                        __global const float4 *restrict ground_points, const float4 source,
                        __global ulong *restrict suspended,
                        __global const uint *restrict cell_count,
                        __global const uint *restrict cell_first,
                        __global const ulong *restrict cell_pool,
                        __global uint *restrict next_count, __global uint *restrict next_first,
                        __global const uchar *restrict bottom, const uint suspend,
                        const float4 flutter_range, const float4 size_law,
                        const uint write_render) {
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    const float dt = params.x, gravity = params.y, tol = params.z, below = params.w;
    float4 p = pos[i];
    float4 v = vel[i];
    int t = (int)tet[i];
    const uint id = ids[i];
    const float4 f = snow_flutter(seed, id, flutter_range, size_law);
    uint count = respawns[i];

    // The snow the parcel carries in suspension, and its share of what the wind lifted in its
    // cell this frame.
    ulong load = 0ul;
    if (suspend) {
        load = suspended[i];
    }
    const ulong carried = load;
    if (suspend && bottom[t]) {
        const int c = snow_bottom_cell(tets, coords, ground_index, t, p.xy);
        if (c >= 0) {
            const uint k = cell_count[c];
            if (k > 0u) {
                const ulong pool = cell_pool[c];
                load += pool / k + (id == cell_first[c] ? pool % k : 0ul);
            }
        }
    }
    int laid = 0;

    // Wind at the particle, from the barycentrics in its tetrahedron.
    const SnowTet home = snow_tet(tets, coords, t);
    const float3 w = snow_wind(tets, wind, t, tet_walk_clamped(snow_dist(&home, p.xyz), home.height));

    // Semi-implicit quadratic drag: v⁺ = (v + dt (k s w − g ẑ)) / (1 + dt k s), s = |w − v|.
    const float k = v.w;
    const float s = length(w - v.xyz);
    const float3 g = (float3)(0.0f, 0.0f, gravity);
    const float3 vn = (v.xyz + dt * (k * s * w - g)) / (1.0f + dt * k * s);

    // Flutter: a horizontal circle of radius f.x at rate f.y, added to the position only.
    float phase = p.w + f.y * dt;
    phase -= SNOW_TWO_PI * floor(phase * (1.0f / SNOW_TWO_PI));
    const float rw = f.x * f.y;
    const float3 circle = (float3)(-sin(phase) * rw, cos(phase) * rw, 0.0f);
    float3 q = p.xyz + dt * (vn + circle);
    float3 vout = vn;

    const uint walk_seed = snow_bits(seed, id, count, SNOW_S_WALK);
    SnowSegment seg = snow_segment(tets, coords, neighbours, t, &home, p.xyz, q, tol, refs2.z);
    int respawn = 0;
    if (seg.status == TET_WALK_LOST) {
        // The segment walk ran out of hops: locate q alone, greedily, from where it stopped.
        const TetWalk wk = tet_walk(tets, coords, neighbours, seg.tet, q, tol, refs2.w, walk_seed);
        if (wk.status == TET_WALK_INSIDE) {
            t = wk.tet;
        } else {
            atom_inc(&counters[SNOW_C_LOST]);
            respawn = 1;
        }
    } else if (seg.status == TET_WALK_INSIDE) {
        t = seg.tet;
    } else {
        const int ref = snow_ilane(face_refs[seg.tet], seg.face);
        if (ref == refs2.x) {
            // Landing: the crossing point's footprint on the cover (snow_deposit.cl).
            const float3 x = p.xyz + seg.s * (q - p.xyz);
            const int4 nd = tets[seg.tet];
            const int j0 = seg.face == 0 ? 1 : 0;
            const int j1 = seg.face <= 1 ? 2 : 1;
            const int j2 = seg.face <= 2 ? 3 : 2;
            const int g0 = ground_index[snow_ilane(nd, j0)];
            const int g1 = ground_index[snow_ilane(nd, j1)];
            const int g2 = ground_index[snow_ilane(nd, j2)];
            const DepositLinks links = {cover_tris, cover_adjacent, cover_xy, cover_around_offsets,
                                        cover_around, cover_lattice, cover_r};
            const float angle =
                SNOW_TWO_PI * snow_unit(snow_bits(seed, id, count, SNOW_S_FOOTPRINT));
            const ulong units = landing_units + load;
            if (g0 < 0 || g1 < 0 || g2 < 0 ||
                !deposit_parcel(&links, deposit, g0, g1, g2, x.xy, footprint + f.x, angle,
                                units)) {
                atom_inc(&counters[SNOW_C_LOST]);
            } else {
                atom_add(&counters[SNOW_C_DEPOSIT], units);
                atom_inc(&counters[SNOW_C_LANDED]);
                if (load > 0ul)
                    atom_add(&counters[SNOW_C_LAID_SUSPENDED], load);
                laid = 1;
            }
            respawn = 1;
        } else if (ref == refs.x || ref == refs.y || ref == refs.z || ref == refs.w) {
            // A side: come back in through the opposite one, where the air is open there.
            const float lx = box.z - box.x, ly = box.w - box.y;
            if (q.x < box.x)
                q.x += lx;
            else if (q.x > box.z)
                q.x -= lx;
            if (q.y < box.y)
                q.y += ly;
            else if (q.y > box.w)
                q.y -= ly;
            const int cx = clamp((int)((q.x - column_map.x) * column_map.z), 0, column_dims.x - 1);
            const int cy = clamp((int)((q.y - column_map.y) * column_map.w), 0, column_dims.y - 1);
            const int start = columns[cx + column_dims.x * cy];
            const TetWalk wk = tet_walk(tets, coords, neighbours, start, q, tol, refs2.w, walk_seed);
            if (wk.status == TET_WALK_INSIDE) {
                t = wk.tet;
                atom_inc(&counters[SNOW_C_WRAPPED]);
            } else {
                atom_inc(&counters[SNOW_C_CLOSED]);
                respawn = 1;
            }
        } else if (ref == refs2.y) {
            atom_inc(&counters[SNOW_C_TOP]);
            respawn = 1;
        } else {
            atom_inc(&counters[SNOW_C_OTHER]);
            respawn = 1;
        }
    }
    if (respawn) {
        // What it carried in suspension was laid with it, or leaves the domain with it.
        if (!laid && load > 0ul)
            atom_add(&counters[SNOW_C_EXIT_SUSPENDED], load);
        load = 0ul;
        count += 1u;
        int rt = -1;
        if (source.x > 0.0f)
            rt = snow_source_point(tets, coords, neighbours, ground_cdf, ground_count, ground_tets,
                                   cover_tris, ground_points, seed, id, total, count, source.x,
                                   source.y, source.z, tol, refs2.w, &q);
        if (rt < 0)
            q = snow_top_point(top_tris, top_cdf, top_count, coords, seed, id, total, count, below,
                               &rt);
        const TetWalk wk = tet_walk(tets, coords, neighbours, rt, q, tol, refs2.w,
                                    snow_bits(seed, id, count, SNOW_S_WALK));
        t = wk.tet;
        vout = snow_wind(tets, wind, t, wk.bary) - (float3)(0.0f, 0.0f, f.w);
    }
    const int finite = all(isfinite(q)) && all(isfinite(vout)) && isfinite(phase);
    if (!finite) {
        atom_inc(&counters[SNOW_C_NONFINITE]);
        atomic_min(first_bad, id);
    }
    pos[i] = (float4)(q, phase);
    vel[i] = (float4)(vout, k);
    tet[i] = (uint)t;
    respawns[i] = count;
    if (write_render)
        render[i] = (float4)(q, 0.5f * f.z * render_scale);
    if (suspend) {
        if (load != carried)
            suspended[i] = load;
        if (bottom[t]) {
            const int c = snow_bottom_cell(tets, coords, ground_index, t, q.xy);
            if (c >= 0) {
                atomic_inc(&next_count[c]);
                atomic_min(&next_first[c], id);
            }
        }
    }
}

// After a ground refresh moved the mesh's vertices (its topology kept): each parcel finds its
// tetrahedron again from its last one. A parcel the raised ground buried is moved straight up
// onto the new surface: the segment from the top of its column down to it crosses the ground
// there, and it goes `params.w` metres above the crossing (it lands in the next step if it
// falls). Nothing is laid or removed: the ledger does not change. params = (tolerance m, top
// of the domain m, depth below the top of the column's start, lift above the ground m); refs2
// as snow_step's; counts[0] parcels moved up, counts[1] parcels not found under their column
// (moved to its top).
__kernel void snow_relocate(__global float4 *restrict pos, __global uint *restrict tet,
                            __global const uint *restrict ids,
                            __global const uint *restrict respawns, const uint n,
                            const uint seed, __global const int4 *restrict tets,
                            __global const float4 *restrict coords,
                            __global const int4 *restrict neighbours,
                            __global const int4 *restrict face_refs,
                            __global const int *restrict columns, const int4 column_dims,
                            const float4 column_map, const float4 params, const int4 refs2,
                            __global ulong *restrict counts) {
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    const float tol = params.x;
    const float4 p = pos[i];
    const uint walk_seed = snow_bits(seed, ids[i], respawns[i], SNOW_S_WALK);
    const TetWalk here = tet_walk(tets, coords, neighbours, (int)tet[i], p.xyz, tol, refs2.w,
                                  walk_seed);
    if (here.status == TET_WALK_INSIDE) {
        tet[i] = (uint)here.tet;
        return;
    }
    const int cx = clamp((int)((p.x - column_map.x) * column_map.z), 0, column_dims.x - 1);
    const int cy = clamp((int)((p.y - column_map.y) * column_map.w), 0, column_dims.y - 1);
    const float3 a = (float3)(p.x, p.y, params.y - params.z);
    const TetWalk top = tet_walk(tets, coords, neighbours, columns[cx + column_dims.x * cy], a,
                                 tol, refs2.w, walk_seed);
    const SnowTet home = snow_tet(tets, coords, top.tet);
    const SnowSegment seg =
        snow_segment(tets, coords, neighbours, top.tet, &home, a, p.xyz, tol, refs2.w);
    if (top.status == TET_WALK_INSIDE && seg.status == TET_WALK_OUTSIDE &&
        snow_ilane(face_refs[seg.tet], seg.face) == refs2.x) {
        const float depth = a.z - p.z;
        const float back = depth > 0.0f ? fmin(seg.s, params.w / depth) : 0.0f;
        const float3 x = a + (seg.s - back) * (p.xyz - a);
        const TetWalk up = tet_walk(tets, coords, neighbours, seg.tet, x, tol, refs2.w, walk_seed);
        pos[i] = (float4)(x, p.w);
        tet[i] = (uint)(up.status == TET_WALK_INSIDE ? up.tet : seg.tet);
        atom_inc(&counts[0]);
    } else {
        pos[i] = (float4)(a, p.w);
        tet[i] = (uint)top.tet;
        atom_inc(&counts[1]);
    }
}

// The index of cell (x, y, z) (10 bits each) along the 3D Hilbert curve of order 10 (30
// bits), by Skilling's transpose: undo the excess work, Gray-encode, interleave the bits.
inline uint snow_hilbert3(uint x, uint y, uint z) {
    for (uint q = 1u << 9; q > 1u; q >>= 1) {
        const uint p = q - 1u;
        // i = 0: x against itself.
        x ^= (x & q) ? p : 0u;
        // i = 1, 2: exchange the low bits of x and y (z) where y (z) has bit q clear, else
        // invert x's; written without branches.
        uint t = (x ^ y) & p;
        const uint yq = (y & q) ? 0xffffffffU : 0u;
        x ^= (p & yq) | (t & ~yq);
        y ^= t & ~yq;
        t = (x ^ z) & p;
        const uint zq = (z & q) ? 0xffffffffU : 0u;
        x ^= (p & zq) | (t & ~zq);
        z ^= t & ~zq;
    }
    y ^= x;
    z ^= y;
    uint t = 0u;
    for (uint q = 1u << 9; q > 1u; q >>= 1)
        t ^= (z & q) ? q - 1u : 0u;
    x ^= t;
    y ^= t;
    z ^= t;
    uint key = 0u;
    for (int b = 9; b >= 0; b--)
        key = (key << 3) | (((x >> b) & 1u) << 2) | (((y >> b) & 1u) << 1) | ((z >> b) & 1u);
    return key;
}

// Sort keys along a Hilbert curve over the box: cell = (pos − lo) · scale, 1024 per axis.
__kernel void snow_hilbert_keys(__global const float4 *restrict pos, __global uint *restrict keys,
                                const uint n, const float4 lo, const float4 scale) {
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    const float3 c = clamp((pos[i].xyz - lo.xyz) * scale.xyz, 0.0f, 1023.0f);
    keys[i] = snow_hilbert3((uint)c.x, (uint)c.y, (uint)c.z);
}

// The Hilbert index of every cell of the grid [0, side)³ (side ≤ 1024), x fastest: for tests.
__kernel void snow_hilbert_grid(__global uint *restrict keys, const uint side) {
    const uint i = get_global_id(0);
    if (i >= side * side * side)
        return;
    keys[i] = snow_hilbert3(i % side, (i / side) % side, i / (side * side));
}

// Parcels per cell of a grid over the box: cell = (pos − lo) · scale, dims.xyz cells (x
// fastest); parcels outside the box are not counted. For the falling snow's density that the
// veil and the near flakes follow (src/snow/density.rs).
__kernel void snow_cell_counts(__global const float4 *restrict pos, __global uint *restrict counts,
                               const uint n, const float4 lo, const float4 scale, const int4 dims) {
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    const float3 c = (pos[i].xyz - lo.xyz) * scale.xyz;
    if (any(c < 0.0f))
        return;
    const int x = (int)c.x, y = (int)c.y, z = (int)c.z;
    if (x >= dims.x || y >= dims.y || z >= dims.z)
        return;
    atomic_inc(&counts[x + dims.x * (y + dims.y * z)]);
}

// The flutter and size of the n parcels whose ids are `ids` (snow_flutter), for the host: what
// a state read reports beside the stored arrays.
__kernel void snow_flutter_of(__global const uint *restrict ids, __global float4 *restrict out,
                              const uint n, const uint seed, const float4 flutter_range,
                              const float4 size_law) {
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    out[i] = snow_flutter(seed, ids[i], flutter_range, size_law);
}

// Applies a sort's order to the parcels' arrays in one pass: x_out[i] = x[order[i]] for the
// position, velocity, id and respawn count, and for the tetrahedron (with_tet: when the sort's
// keys were not the tetrahedra themselves) and the snow in suspension (with_suspended). One
// read of the order for all of them instead of one per array. An order entry at or past n
// (never from a sort of n pairs) gives a NaN position, which the step's check reports.
__kernel void snow_permute(__global const uint *restrict order, const uint n,
                           __global const float4 *restrict pos, __global const float4 *restrict vel,
                           __global const uint *restrict ids, __global const uint *restrict respawns,
                           __global const uint *restrict tet, __global const ulong *restrict suspended,
                           __global float4 *restrict pos_out, __global float4 *restrict vel_out,
                           __global uint *restrict ids_out, __global uint *restrict respawns_out,
                           __global uint *restrict tet_out, __global ulong *restrict suspended_out,
                           const uint with_tet, const uint with_suspended) {
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    uint j = order[i];
    const bool valid = j < n;
    j = valid ? j : i;
    pos_out[i] = valid ? pos[j] : (float4)(NAN);
    vel_out[i] = vel[j];
    ids_out[i] = ids[j];
    respawns_out[i] = respawns[j];
    if (with_tet)
        tet_out[i] = tet[j];
    if (with_suspended)
        suspended_out[i] = suspended[j];
}
