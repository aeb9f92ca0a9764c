// Particle splatting: every flake projected with the camera's own matrix and written, nearest
// first, into a linear image of one 64-bit value per pixel, plus a coverage counter per pixel,
// that OpenGL composites over the terrain (shaders/splat.frag).
//
// A pixel value is `(depth bits << 32) | RGBA8`: the high word is the window depth of the
// nearest flake as float bits (depths are in [0, 1], and positive floats order as their bits),
// the low word its colour, R in the lowest byte, with alpha the flake's coverage. An empty
// pixel is all ones, so `atom_min` keeps the nearest flake (`cl_khr_int64_extended_atomics`).
// Rows run bottom to top, as GL's window coordinates: pixel (x, y) is `image[y * width + x]`.
//
// Beside it, after the 64-bit words of all pixels (their count rounded up to a multiple of 4,
// `coverage_offset` ulong from the start), each pixel has a 32-bit coverage counter: the sum,
// in fixed point (SPLAT_COVERAGE_ONE per unit), of every translucent flake's optical depth
// -ln(1 - alpha) on that pixel, which only ever grows (an atomic add, order independent). The
// composite draws the nearest flake's colour and depth with the opacity 1 - exp(-sum), that is
// 1 - prod(1 - alpha): what blending the same flakes as sprites over one another gives, so many
// faint flakes on a line of sight add up as they do with sprites. A flake opaque on a pixel
// (alpha byte 255) adds nothing: it makes the pixel opaque when it is the nearest there, as it
// is unless a translucent one lies in front of it (then that pixel misses it).
//
// Each flake is drawn as the sprite shader draws it (shaders/particles.vert and .frag): a disc
// whose drawn diameter is its projected one, never below the pixel floor, with the opacity of
// its true footprint over the drawn one (alpha by coverage), a shade slightly brighter in the
// middle and a soft rim. A flake drawn wider than `viewport.w` pixels does not loop over its
// footprint here (one work-item would hold its whole group back): it is appended to
// `overflow`, which GL draws as sprites.
//
// A parcel nearer to the eye than `cloud.z` metres is drawn as `cloud.x` flakes instead of one
// disc: the flakes of its share of the air, spread by a hash over a ball around it whose radius
// is `cloud.y` (half the parcels' spacing) within half that distance and shrinks to nothing at
// it (so a parcel that crosses it does not jump), each a disc of the parcel's radius over
// sqrt(cloud.x) (together the parcel's area: the same light where they overlap far away).
// The hash is seeded with the bits of the parcel's radius, which stay with it while the
// buffer is sorted under it; particles.geom spreads the sprites with the same hash.

#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#pragma OPENCL EXTENSION cl_khr_int64_extended_atomics : enable

#define SPLAT_EMPTY 0xFFFFFFFFFFFFFFFFUL
// Fixed-point units of one unit of optical depth in the coverage counters (src/splat: the
// same constant, COVERAGE_ONE).
#define SPLAT_COVERAGE_ONE 65536.0f

// Empties the image and zeroes its coverage counters (two pixels per work-item: `len` ulong2
// hold the words of 2·len pixels, the counters follow them), and empties the overflow list.
__kernel void splat_clear(__global ulong2 *restrict image,
                          const uint len,
                          __global uint *restrict overflow_count)
{
    const uint i = get_global_id(0);
    if (i == 0u)
        *overflow_count = 0u;
    if (i < len) {
        image[i] = (ulong2)(SPLAT_EMPTY, SPLAT_EMPTY);
        ((__global uint2 *)(image + len))[i] = (uint2)(0u, 0u);
    }
}

// The hash that spreads a parcel's flakes (the same in shaders/particles.geom): lowbias32.
uint splat_hash(uint x)
{
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

// Flake `j` of the parcel seeded `seed`: a point of the unit ball, uniform in volume.
float3 splat_cloud_point(const uint seed, const uint j)
{
    const float3 u = (float3)(splat_hash(seed ^ splat_hash(3u * j + 1u)),
                              splat_hash(seed ^ splat_hash(3u * j + 2u)),
                              splat_hash(seed ^ splat_hash(3u * j + 3u))) /
                     4294967296.0f;
    const float z = 2.0f * u.x - 1.0f;
    const float ring = sqrt(max(1.0f - z * z, 0.0f));
    const float phi = 6.28318530718f * u.y;
    return pow(u.z, 1.0f / 3.0f) * (float3)(ring * cos(phi), ring * sin(phi), z);
}

// RGBA in [0, 1] as RGBA8, R in the lowest byte.
uint pack_rgba8(const float4 c)
{
    const uint4 b = convert_uint4_sat_rte(c * 255.0f);
    return b.x | (b.y << 8) | (b.z << 16) | (b.w << 24);
}

// Where and how a frame's flakes are splatted: the splat kernel's arguments of the same
// names, gathered for its discs.
typedef struct {
    float4 row0, row1, row2, row3;
    float4 viewport;
    float min_diameter;
    float4 colour;
    __global ulong *image;
    uint coverage_offset;
    __global float4 *overflow;
    __global uint *overflow_count;
    uint overflow_cap;
} SplatTarget;

// One disc of `radius` metres at `at` into `t` (see splat below for its fields).
void splat_disc(const float3 at, const float radius, const SplatTarget t)
{
    const float4 row0 = t.row0, row1 = t.row1, row2 = t.row2, row3 = t.row3;
    const float4 viewport = t.viewport;
    const float min_diameter = t.min_diameter;
    const float4 colour = t.colour;
    __global ulong *restrict image = t.image;
    const uint coverage_offset = t.coverage_offset;
    __global float4 *restrict overflow = t.overflow;
    __global uint *restrict overflow_count = t.overflow_count;
    const uint overflow_cap = t.overflow_cap;
    const float4 position = (float4)(at, 1.0f);
    const float4 clip = (float4)(dot(row0, position), dot(row1, position),
                                 dot(row2, position), dot(row3, position));
    // Behind the eye, or outside the near and far planes: GL clips the point.
    if (!(clip.w > 0.0f) || !(fabs(clip.z) <= clip.w))
        return;
    const float inv_w = 1.0f / clip.w;
    // GL's mapping: NDC in [-1, 1], window x and y over the viewport, depth range [0, 1].
    const float x = (clip.x * inv_w * 0.5f + 0.5f) * viewport.x;
    const float y = (clip.y * inv_w * 0.5f + 0.5f) * viewport.y;
    const float depth = max(clip.z * inv_w * 0.5f + 0.5f, 0.0f);
    // clip.w is the distance along the view axis (-eye.z) for GL's perspective matrix.
    const float distance = max(clip.w, 1e-3f);
    const float projected = 2.0f * radius * viewport.z / distance;
    const float drawn = max(projected, min_diameter);
    const float ratio = min(projected / drawn, 1.0f);
    const float coverage = ratio * ratio;
    const float r = 0.5f * drawn;
    // Pixels whose centre lies within the disc (as GL's point rasterisation and the sprite's
    // discard outside the unit circle).
    const int x0 = max((int)ceil(x - r - 0.5f), 0);
    const int x1 = min((int)floor(x + r - 0.5f), (int)viewport.x - 1);
    const int y0 = max((int)ceil(y - r - 0.5f), 0);
    const int y1 = min((int)floor(y + r - 0.5f), (int)viewport.y - 1);
    if (x0 > x1 || y0 > y1 || !(coverage > 0.0f))
        return;
    if (drawn > viewport.w) {
        const uint slot = atomic_inc(overflow_count);
        if (slot < overflow_cap)
            overflow[slot] = (float4)(at, radius);
        // Past the capacity the host grows the list and splats the frame again.
        return;
    }
    const ulong depth_word = (ulong)as_uint(depth) << 32;
    const uint width = (uint)viewport.x;
    __global uint *const counters = (__global uint *)(image + coverage_offset);
    const float inv_r2 = 1.0f / (r * r);
    // Coverage units of the flake where its rim does not fade it (most of a faint flake's
    // pixels): one logarithm per flake, not per pixel. Unused where it is opaque.
    const uint flake_units =
        convert_uint_sat_rte(-native_log(1.0f - coverage) * SPLAT_COVERAGE_ONE);
    for (int py = y0; py <= y1; ++py) {
        const float dy = (float)py + 0.5f - y;
        for (int px = x0; px <= x1; ++px) {
            const float dx = (float)px + 0.5f - x;
            const float r2 = (dx * dx + dy * dy) * inv_r2;
            if (r2 > 1.0f)
                continue;
            const float rim = 1.0f - smoothstep(0.81f, 1.0f, r2);
            const float shade = 0.92f + 0.08f * sqrt(1.0f - r2);
            const float alpha = coverage * rim;
            const uint rgba = pack_rgba8((float4)(colour.xyz * shade, alpha));
            // Opaque on this pixel: no counter (see the top of this file).
            const uint units =
                (rgba >> 24) == 255u ? 0u
                : rim == 1.0f        ? flake_units
                                     : convert_uint_sat_rte(-native_log(1.0f - alpha) *
                                                            SPLAT_COVERAGE_ONE);
            // A pixel it neither covers nor adds to would only hide flakes behind it.
            if ((rgba >> 24) == 0u && units == 0u)
                continue;
            const size_t pixel = (size_t)py * width + (size_t)px;
            atom_min(&image[pixel], depth_word | (ulong)rgba);
            if (units != 0u)
                atomic_add(&counters[pixel], units);
        }
    }
}

// One work-item per particle (float4: xyz position, w radius in metres).
//
// row0..row3: the rows of the camera's view-projection matrix (the renderer's `proj · view`).
// viewport: width and height in pixels, the point scale (pixels per metre at unit distance,
// height / (2 tan(fovy / 2))), and the largest diameter splatted here (the cap).
// min_diameter: the pixel floor of the drawn diameter. colour: the snow's RGB (w unused).
// coverage_offset: where the coverage counters start, in ulong from the image's start.
// eye: the camera's position (w unused). cloud: flakes per near parcel (0: none), the ball's
// radius in metres, the distance within which parcels are drawn as flakes (see the top).
__kernel void splat(__global const float4 *restrict particles,
                    const uint n,
                    const float4 row0,
                    const float4 row1,
                    const float4 row2,
                    const float4 row3,
                    const float4 viewport,
                    const float min_diameter,
                    const float4 colour,
                    __global ulong *restrict image,
                    const uint coverage_offset,
                    __global float4 *restrict overflow,
                    __global uint *restrict overflow_count,
                    const uint overflow_cap,
                    const float4 eye,
                    const float4 cloud)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    const SplatTarget t = {row0,  row1,         row2,     row3,           viewport,
                           min_diameter, colour, image, coverage_offset, overflow,
                           overflow_count, overflow_cap};
    const float4 p = particles[i];
    const uint flakes = (uint)cloud.x;
    const float d = distance(p.xyz, eye.xyz);
    if (flakes == 0u || !(d < cloud.z)) {
        splat_disc(p.xyz, p.w, t);
        return;
    }
    const float spread = cloud.y * clamp(2.0f * (1.0f - d / cloud.z), 0.0f, 1.0f);
    const float radius = p.w * rsqrt((float)flakes);
    const uint seed = as_uint(p.w);
    for (uint j = 0u; j < flakes; ++j)
        splat_disc(p.xyz + spread * splat_cloud_point(seed, j), radius, t);
}
