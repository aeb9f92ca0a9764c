// Drifting snow on the cover (src/snow/drift.rs has the model, its laws and their sources).
// Four kernels, then the cover's exact edge exchange (cover_ratio, cover_apply in
// snow_cover.cl) on the bed, then one more:
//   drift_friction  per cover vertex: the friction velocity, a vector along the wind, from its
//                   coarse parents' first levels above the ground by the log law;
//   drift_flux_state per cover vertex: the saltation flux q (m² of laid snow per second)
//                   relaxed from what flows in from upwind towards the equilibrium flux over
//                   the saturation length, read from last frame's q, written to this frame's;
//                   and the units it sends out through the domain's boundary;
//   drift_flux      per cover edge: the units of laid snow crossing the edge's dual face,
//                   a · q · (d · N) · dt from the upwind end, signed (> 0 from the edge's
//                   first vertex);
//   drift_limit     per cover vertex, after the exchange: a vertex that could not give all it
//                   wanted (its bed ran out) carries only what it gave (q times its ratio).

#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable

#define DRIFT_FULL 0xffffffffU

// parents[v]: up to three coarse ground vertices and their numerators (of r, a byte each in
// w; 0 ends the list). upper[g], height[g]: the volume vertex of g's first level and its height
// above g. friction[v]: kappa |U_h(z1)| / ln(z1 / z0) along U_h, mixed by the numerators.
__kernel void drift_friction(__global const uint4 *restrict parents,
                             __global const uint *restrict upper,
                             __global const float *restrict height,
                             __global const float4 *restrict wind,
                             __global float2 *restrict friction, const uint n, const float r,
                             const float kappa, const float z0) {
    const uint v = get_global_id(0);
    if (v >= n)
        return;
    const uint4 p = parents[v];
    const uint ids[3] = {p.x, p.y, p.z};
    float2 u = (float2)(0.0f, 0.0f);
    for (uint k = 0; k < 3; k++) {
        const uint num = (p.w >> (8u * k)) & 0xffu;
        if (num == 0u)
            break;
        const uint g = ids[k];
        const float z1 = height[g];
        const float2 w = wind[upper[g]].xy;
        const float scale = kappa / log(fmax(z1 / z0, 2.718281828f));
        u += ((float)num / r) * scale * w;
    }
    friction[v] = u;
}

// Pomeroy & Gray (1990): the equilibrium saltation flux in m² of laid snow per second at
// friction velocity u (kg m^-1 s^-1 over the snow's density). law: threshold u*t, air density,
// g, snow density.
inline float drift_equilibrium(const float u, const float4 law) {
    const float t = law.x;
    return u > t ? 0.68f * law.y * t * (u * u - t * t) / (law.z * u) / law.w : 0.0f;
}

// The grains' velocity through the dual face of incident edge `code` (2 e + 1 if v is the
// edge's second vertex), dotted with the face's vector area as seen from v going out: > 0 out
// of v, < 0 into it.
inline float drift_face_out(const uint code, __global const uint2 *restrict edges,
                            __global const float2 *restrict face,
                            __global const float2 *restrict friction, const float grain) {
    const uint e = code >> 1;
    const uint2 ab = edges[e];
    const float s = grain * 0.5f * dot(friction[ab.x] + friction[ab.y], face[e]);
    return (code & 1u) ? -s : s;
}

// law as drift_equilibrium; shape: saturation length (m), grain speed over u*, dt (s), the
// morphological factor a over the unit's volume (units per m³).
// q_in: the mean of the upwind neighbours' last q weighted by what flows in across each face;
// a grain crosses the cell over L = A u_p / (inflow), and q relaxes from q_in towards q_eq by
// e^(-L / l). No inflow (the upwind boundary, a divergence): q_in = 0, L = sqrt(A).
__kernel void drift_flux_state(__global const uint *restrict offsets,
                               __global const uint *restrict incident,
                               __global const uint2 *restrict edges,
                               __global const float2 *restrict face,
                               __global const float2 *restrict friction,
                               __global const float *restrict threshold,
                               __global const float *restrict area,
                               __global const float2 *restrict boundary,
                               __global const float *restrict q_last,
                               __global float *restrict q_next,
                               __global ulong *restrict sink, const uint n,
                               const float4 law, const float4 shape) {
    const uint v = get_global_id(0);
    if (v >= n)
        return;
    float inflow = 0.0f, carried = 0.0f;
    for (uint k = offsets[v]; k < offsets[v + 1]; k++) {
        const uint code = incident[k];
        const float out = drift_face_out(code, edges, face, friction, shape.y);
        if (out < 0.0f) {
            const uint2 ab = edges[code >> 1];
            const uint other = (code & 1u) ? ab.x : ab.y;
            inflow -= out;
            carried -= out * q_last[other];
        }
    }
    const float2 f = friction[v];
    const float u = length(f);
    float4 here = law;
    here.x = threshold[v];
    const float eq = drift_equilibrium(u, here);
    const float a = area[v];
    const float speed = shape.y * u;
    const float q_in = inflow > 0.0f ? carried / inflow : 0.0f;
    const float cross = inflow > 0.0f ? a * speed / inflow : sqrt(a);
    const float q = eq + (q_in - eq) * exp(-cross / shape.x);
    q_next[v] = q;
    // Out through the boundary: a q (d · B) dt, d the wind's direction.
    const float through = u > 0.0f ? dot(f, boundary[v]) / u : 0.0f;
    const float units = shape.w * q * through * shape.z;
    sink[v] = units >= 1.0f ? (ulong)fmin(units, 9.0e18f) : 0ul;
}

// Units across edge e's dual face: a q_d (d_d · N) dt / unit from the upwind end d (N the
// face's vector area from a to b), signed. q: this frame's flux per vertex.
__kernel void drift_flux(__global const uint2 *restrict edges, __global const float2 *restrict face,
                         __global const float2 *restrict friction,
                         __global const float *restrict q, __global long *restrict flux,
                         const uint n, const float4 shape) {
    const uint e = get_global_id(0);
    if (e >= n)
        return;
    const uint2 ab = edges[e];
    const float s = 0.5f * dot(friction[ab.x] + friction[ab.y], face[e]);
    long f = 0;
    if (s != 0.0f) {
        const uint d = s > 0.0f ? ab.x : ab.y;
        const float2 w = friction[d];
        const float u = length(w);
        const float across = u > 0.0f ? fabs(dot(w, face[e])) / u : 0.0f;
        const float units = fmin(shape.w * q[d] * across * shape.z, 9.0e18f);
        f = units >= 1.0f ? (long)units : 0;
        f = s > 0.0f ? f : -f;
    }
    flux[e] = f;
}

// After the exchange: q scaled by the fraction of its outflow the vertex could give.
__kernel void drift_limit(__global const uint *restrict ratio, __global float *restrict q,
                          const uint n) {
    const uint v = get_global_id(0);
    if (v >= n)
        return;
    const uint r = ratio[v];
    if (r != DRIFT_FULL)
        q[v] *= (float)r * (1.0f / 4294967296.0f);
}

// The friction velocity's magnitude (m/s) per coarse ground vertex, four per float4, for the
// terrain's u* view: the cover numbers the coarse ground vertices first, with their own ids.
__kernel void drift_ground_friction(__global const float2 *restrict friction,
                                    __global float4 *restrict out, const uint n) {
    const uint i = get_global_id(0);
    if (4 * i >= n)
        return;
    float d[4];
    for (uint k = 0; k < 4; k++) {
        const uint v = 4 * i + k;
        d[k] = v < n ? length(friction[v]) : 0.0f;
    }
    out[i] = (float4)(d[0], d[1], d[2], d[3]);
}

// With ageing (src/snow/drift.rs, Ageing): each cover vertex's snow age at the surface
// advances by dt real seconds; any snow added since the last frame (landed, drifted in or laid
// from suspension) makes it younger (the volume-weighted mean of the old snow's age and the
// added snow's zero); bare ground has age 0. The
// threshold follows: aged - (aged - fresh) e^(-age / time). law = (dt, time, fresh, aged).
__kernel void drift_age(__global const ulong *restrict volume, __global ulong *restrict last,
                        __global float *restrict age, __global float *restrict threshold,
                        const uint n, const float4 law) {
    const uint v = get_global_id(0);
    if (v >= n)
        return;
    const ulong now = volume[v];
    const ulong before = last[v];
    float a = age[v] + law.x;
    if (now == 0ul)
        a = 0.0f;
    else if (now > before)
        a *= (float)before / (float)now;
    age[v] = a;
    last[v] = now;
    threshold[v] = law.w - (law.w - law.z) * exp(-a / law.y);
}
