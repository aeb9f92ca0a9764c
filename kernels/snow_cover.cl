// The snow cover on the ground surface: volumes per ground vertex in 64-bit fixed point (one
// unit is `unit` m³), and its smoothing per ground-surface edge (src/snow/cover.rs).
//
// Surface height at vertex v: z[v] + volume[v] · unit / area[v] (area: the vertex's horizontal
// dual area). Where the surface between the two ends of an edge is steeper than the repose
// angle, the higher end gives `rate` times the volume that would bring the edge back to the
// angle. Three kernels, each a gather, no atomics:
//   cover_flux   per edge: the wanted flux, signed (> 0 from a to b), in units;
//   cover_ratio  per vertex: the fraction (32-bit fixed point) of its wanted outflow that it
//                can give, so that the total outflow never exceeds its volume;
//   cover_apply  per vertex: volume += inflows − outflows, each edge's flux scaled by its
//                donor's ratio, computed identically at both ends, so the total is exact.
// The last two also serve the drifting snow's transport (kernels/snow_drift.cl) on the
// saltating reservoir, with a sink: when `has_sink`, vertex v also wants to give sink[v]
// units out of the domain (blown out through its boundary), limited with its edges, and
// cover_apply adds what it gave to counter[0] and its net loss, if any, to counter[1] (exact
// 64-bit sums, in any order).

#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable

#define COVER_FULL 0xffffffffU

__kernel void cover_flux(__global const uint2 *restrict edges, __global const float *restrict length,
                         __global const float *restrict z, __global const float *restrict area,
                         __global const ulong *restrict volume, __global long *restrict flux,
                         const uint n, const float unit, const float tan_repose,
                         const float rate) {
    const uint e = get_global_id(0);
    if (e >= n)
        return;
    const uint2 ab = edges[e];
    const float va = (float)volume[ab.x] * unit, vb = (float)volume[ab.y] * unit;
    const float aa = area[ab.x], ab_ = area[ab.y];
    const float ha = z[ab.x] + va / aa, hb = z[ab.y] + vb / ab_;
    const float excess = fabs(ha - hb) - length[e] * tan_repose;
    long f = 0;
    if (excess > 0.0f) {
        // Moving V lowers the donor by V / A_d and raises the other end by V / A_r.
        const float moved = rate * excess * (aa * ab_) / (aa + ab_) / unit;
        const float donor = ha > hb ? (float)volume[ab.x] : (float)volume[ab.y];
        // At most what the donor has, and within a long.
        const float units = fmin(fmin(moved, donor), 9.0e18f);
        const long u = (long)units;
        f = ha > hb ? u : -u;
    }
    flux[e] = f;
}

// incident[offsets[v] .. offsets[v + 1]]: 2 e + (1 if v is the edge's b end).
__kernel void cover_ratio(__global const uint *restrict offsets, __global const uint *restrict incident,
                          __global const long *restrict flux, __global const ulong *restrict volume,
                          __global uint *restrict ratio, const uint n,
                          __global const ulong *restrict sink, const uint has_sink) {
    const uint v = get_global_id(0);
    if (v >= n)
        return;
    ulong out = has_sink ? sink[v] : 0ul;
    for (uint k = offsets[v]; k < offsets[v + 1]; k++) {
        const uint code = incident[k];
        const long f = flux[code >> 1];
        const int is_b = code & 1u;
        if ((!is_b && f > 0) || (is_b && f < 0))
            out += (ulong)(f > 0 ? f : -f);
    }
    const ulong have = volume[v];
    uint r = COVER_FULL;
    if (out > have) {
        // have / out · 2^32 rounded down, in integers (no fp64 needed): both shifted right
        // until out fits 32 bits, the numerator rounded down and the denominator up, so the
        // ratio never exceeds the true one and the outflows never exceed the volume.
        const uint bits = 64u - (uint)clz(out);
        const uint s = bits > 32u ? bits - 32u : 0u;
        const ulong num = have >> s;
        const ulong den = (out >> s) + 1ul;
        r = (uint)min((num << 32) / den, (ulong)(COVER_FULL - 1u));
    }
    ratio[v] = r;
}

inline ulong cover_scaled(ulong f, uint r) {
    return r == COVER_FULL ? f : mul_hi(f, ((ulong)r) << 32);
}

__kernel void cover_apply(__global const uint *restrict offsets, __global const uint *restrict incident,
                          __global const uint2 *restrict edges, __global const long *restrict flux,
                          __global const uint *restrict ratio, __global ulong *restrict volume,
                          const uint n, __global const ulong *restrict sink, const uint has_sink,
                          __global ulong *restrict counter) {
    const uint v = get_global_id(0);
    if (v >= n)
        return;
    ulong gain = 0, loss = 0;
    if (has_sink && sink[v] != 0ul) {
        const ulong sunk = cover_scaled(sink[v], ratio[v]);
        loss += sunk;
        if (sunk != 0ul)
            atom_add(counter, sunk);
    }
    for (uint k = offsets[v]; k < offsets[v + 1]; k++) {
        const uint code = incident[k];
        const uint e = code >> 1;
        const long f = flux[e];
        if (f == 0)
            continue;
        const uint2 ab = edges[e];
        const uint donor = f > 0 ? ab.x : ab.y;
        const ulong moved = cover_scaled((ulong)(f > 0 ? f : -f), ratio[donor]);
        if (donor == v)
            loss += moved;
        else
            gain += moved;
    }
    if (has_sink && loss > gain)
        atom_add(counter + 1, loss - gain);
    volume[v] = volume[v] - loss + gain;
}

// The laid snow's depth per coarse ground vertex in metres, four vertices per float4: the
// fine volumes restricted to the vertex (a gather over its entries `4 f + slot`, each the
// fine volume times its numerator over r: the restriction in f32, which the drawing needs; the
// exact integer shares are cover_ground_units's below) over its horizontal dual area. What
// the terrain renderer reads as its laid-depth attribute: `depth` holds n rounded up to a
// multiple of 4 floats (float4 for GL), written as floats, one work-item each; those past n are written 0. One
// work-item per vertex rather than per float4: a vertex gathers tens of entries, and four
// in a row left too few work-items in flight to hide the gathers' latency.
__kernel void cover_ground_depth(__global const uint *restrict offsets,
                                 __global const uint *restrict entries,
                                 __global const uint *restrict numerators,
                                 __global const ulong *restrict volume,
                                 __global const float *restrict area,
                                 __global float4 *restrict depth, const uint n, const uint r,
                                 const float unit) {
    const uint v = get_global_id(0);
    if (v >= ((n + 3u) & ~3u))
        return;
    float total = 0.0f;
    if (v < n) {
        for (uint e = offsets[v]; e < offsets[v + 1]; e++) {
            const uint code = entries[e];
            const uint f = code >> 2;
            const uint num = (numerators[f] >> (8u * (code & 3u))) & 0xffu;
            total += (float)volume[f] * (float)num;
        }
    }
    ((__global float *)depth)[v] = v < n ? total * (unit / (float)r) / area[v] : 0.0f;
}

// floor(v · n / r) exactly, for n ≤ r < 2^32: the 128-bit product divided by long division in
// 32-bit digits (the quotient fits 64 bits because n ≤ r).
ulong share_of(const ulong v, const uint n, const uint r) {
    const ulong hi = mul_hi(v, (ulong)n);
    const ulong lo = v * (ulong)n;
    const ulong a = ((hi % r) << 32) | (lo >> 32);
    const ulong b = ((a % r) << 32) | (lo & 0xffffffffUL);
    return ((a / r) << 32) | (b / r);
}

// The laid snow restricted to the coarse ground's vertices in whole units, exactly as
// CoverMesh::restrict does on the host (`src/snow/refine.rs`): each fine vertex's units go to
// its parents by their numerators over r, rounded down, the last parent taking what is left,
// so that every unit lands somewhere. A gather over each coarse vertex's entries `4 f + slot`:
// the slot's share recomputed from the fine vertex's packed numerators (one byte per slot,
// filled in order). What a ground refresh raises the wind's ground by.
__kernel void cover_ground_units(__global const uint *restrict offsets,
                                 __global const uint *restrict entries,
                                 __global const uint *restrict numerators,
                                 __global const ulong *restrict volume,
                                 __global ulong *restrict units, const uint n, const uint r) {
    const uint v = get_global_id(0);
    if (v >= n)
        return;
    ulong total = 0;
    for (uint e = offsets[v]; e < offsets[v + 1]; e++) {
        const uint code = entries[e];
        const uint f = code >> 2;
        const uint slot = code & 3u;
        const uint packed = numerators[f];
        const ulong fine = volume[f];
        const bool last = slot == 2u || ((packed >> (8u * (slot + 1u))) & 0xffu) == 0u;
        if (last) {
            ulong left = fine;
            for (uint k = 0; k < slot; k++)
                left -= share_of(fine, (packed >> (8u * k)) & 0xffu, r);
            total += left;
        } else {
            total += share_of(fine, (packed >> (8u * slot)) & 0xffu, r);
        }
    }
    units[v] = total;
}

// Another device's landings, handed over packed (`src/snow/handover.rs`): the parcels split
// across devices (`--snow-devices`) lay on their own devices' covers, of which only the few
// vertices that received snow in a frame are non-zero. `cover_pack` writes those as (vertex,
// units) pairs after `count` (zeroed before the launch; one atomic per work-group) and clears
// them; `cover_add_packed` adds the pairs to the snow's device's cover, exactly, before it is
// smoothed or drifts. Every vertex appears at most once per hand-over, so the pairs' order,
// which the atomics choose, changes nothing.
__kernel void cover_pack(__global ulong *restrict volume, const uint n,
                         __global ulong2 *restrict packed, __global uint *restrict count) {
    __local uint group_count;
    __local uint group_first;
    const uint i = get_global_id(0);
    if (get_local_id(0) == 0)
        group_count = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    const ulong units = i < n ? volume[i] : 0;
    uint slot = 0;
    if (units != 0)
        slot = atomic_inc(&group_count);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (get_local_id(0) == 0 && group_count != 0)
        group_first = atomic_add(count, group_count);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (units != 0) {
        packed[group_first + slot] = (ulong2)((ulong)i, units);
        volume[i] = 0;
    }
}

__kernel void cover_add_packed(__global ulong *restrict volume, const uint n,
                               __global const ulong2 *restrict packed, const uint count) {
    const uint k = get_global_id(0);
    if (k < count) {
        const ulong2 p = packed[k];
        if (p.x < n)
            volume[p.x] += p.y;
    }
}
