// Snow lifted into suspension (src/snow/suspension.rs has the law and its sources). Built after
// snow.cl (its counters). At set-up and after each ground refresh:
//   suspend_sites  per cover vertex: the height term and settling flux where its lifted snow
//                  enters the air, from its coarse parents' first levels.
// One kernel, at the start of a frame, before any landing:
//   suspend_erode  per cover vertex: the units the wind lifts from it this frame, from the cover
//                  as it stood at the frame's start, when the bottom cell it belongs to holds a
//                  parcel to carry them; added to that cell's pool, which snow_step shares out
//                  among the cell's parcels.
// Cells are the wind mesh's ground vertices (the cover numbers them first, with their own
// ids); `cell[v]` the one a cover vertex belongs to (its parent of largest numerator).

#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable

// friction[v]: u* along the wind, threshold[v] the threshold u*t there (snow_drift.cl). site[v] = (z_e^-0.544, w_s A): the reference
// concentration's height term at the height the lifted snow enters the model's air, and the
// settling speed there times the vertex's area (m³/s). law = (unused, 0.05628 (the reference
// height over u*, s), units per kg of lifted snow per m³ of air per m³/s in this frame, unused).
// Clears the other frame's pool and the next frame's counts on the cells (v < cells).
__kernel void suspend_erode(__global const float2 *restrict friction,
                            __global const float *restrict threshold,
                            __global const uint *restrict cell,
                            __global const float2 *restrict site,
                            __global ulong *restrict volume,
                            __global const uint *restrict cell_count,
                            __global ulong *restrict pool, __global ulong *restrict stale_pool,
                            __global uint *restrict next_count,
                            __global uint *restrict next_first,
                            __global ulong *restrict lifted_slots, const uint n,
                            const uint cells,
                            const float4 law) {
    const uint v = get_global_id(0);
    if (v >= n)
        return;
    if (v < cells) {
        stale_pool[v] = 0ul;
        next_count[v] = 0u;
        next_first[v] = 0xffffffffu;
    }
    const uint c = cell[v];
    if (cell_count[c] == 0u)
        return;
    const float u = length(friction[v]);
    if (!(u > threshold[v]))
        return;
    const float2 s = site[v];
    // Pomeroy & Male (1992): c(z) = 0.8 exp(-1.55 (z_r^-0.544 - z^-0.544)) kg/m³, z_r = 0.05628 u*.
    const float concentration = 0.8f * exp(-1.55f * (pow(law.y * u, -0.544f) - s.x));
    const float units = law.z * s.y * concentration;
    if (!(units >= 1.0f))
        return;
    const ulong have = volume[v];
    const ulong lifted = min((ulong)fmin(units, 9.0e18f), have);
    if (lifted == 0ul)
        return;
    volume[v] = have - lifted;
    atom_add(&pool[c], lifted);
    // Summed over 64 slots (one per vertex modulo 64) that the host adds up: every vertex
    // lifting into one counter would queue on one address.
    atom_add(&lifted_slots[v & 63u], lifted);
}

// Adds another device's next counts and smallest ids to this device's (the parcels split
// across devices, `--snow-devices`): counts sum, the smallest id wins, so the cells are what
// one device holding every parcel would have counted.
__kernel void suspend_merge(__global uint *restrict count, __global uint *restrict first,
                            __global const uint *restrict other_count,
                            __global const uint *restrict other_first, const uint cells) {
    const uint c = get_global_id(0);
    if (c >= cells)
        return;
    count[c] += other_count[c];
    first[c] = min(first[c], other_first[c]);
}

// parents[v]: up to three coarse ground vertices and their numerators (of r, a byte each in w;
// 0 ends the list), as snow_drift.cl reads them; level_height[g] the height of g's first level
// above g, m; area[v] the cover vertex's horizontal dual area, m². site[v] = (z_e^-0.544,
// w_s(z_e) A) with z_e half the first level's height mixed by the numerators (at least 1 mm)
// and w_s(z) = 1.1e7 r(z)^1.8, r(z) = 4.6e-5 z^-0.258 m below 5 m, 30 µm above: the law of
// src/snow/suspension.rs (`settling_speed`), in float.
__kernel void suspend_sites(__global const uint4 *restrict parents,
                            __global const float *restrict level_height,
                            __global const float *restrict area, __global float2 *restrict site,
                            const uint n, const float inv_r) {
    const uint v = get_global_id(0);
    if (v >= n)
        return;
    const uint4 p = parents[v];
    const uint ids[3] = {p.x, p.y, p.z};
    float z1 = 0.0f;
    for (uint k = 0; k < 3; k++) {
        const uint num = (p.w >> (8u * k)) & 0xffu;
        if (num == 0u)
            break;
        z1 += (float)num * inv_r * level_height[ids[k]];
    }
    const float z = fmax(0.5f * z1, 1e-3f);
    const float radius = z >= 5.0f ? 30e-6f : 4.6e-5f * powr(z, -0.258f);
    site[v] = (float2)(powr(z, -0.544f), 1.1e7f * powr(radius, 1.8f) * area[v]);
}
