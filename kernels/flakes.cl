// Stand-in particle and wind kernels that drive the renderer until the real simulation exists.
//
// Coordinates: x east, y north, z up, metres (as the scene files).
//
// Particles are float4: xyz is the position in metres, w the flake radius in metres; the
// renderer draws each one as a point sprite of that radius. The flakes live in the air of a
// scene: the box [lo, hi) above a ground given as a regular grid of heights (see
// `ground_height`). `flakes_step` lets flakes fall at a speed that grows with their radius,
// drift with the scene's wind at their height above the ground (see `profile_factor`), flutter
// sideways, and wrap around: a flake that leaves the box through a side comes back through the
// opposite one, and one that reaches the ground comes back in at the top. `wind_profile` fills
// the debug view of the wind: one (position, velocity + pressure) pair of float4 per sample
// point of a terrain-following grid, from the same profile.

// Integer hash (Wang/Jenkins style): decorrelates consecutive particle indices.
uint hash_uint(uint x)
{
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

// Uniform value in [0, 1) from a hashed key.
float unit_random(uint key)
{
    return (float)(hash_uint(key) >> 8) * (1.0f / 16777216.0f);
}

// Wraps `v` into [lo, lo + len).
float wrap(float v, float lo, float len)
{
    float t = fmod(v - lo, len);
    if (t < 0.0f)
        t += len;
    return lo + t;
}

// Ground height under (x, y): bilinear between the `dims.x * dims.y` heights of a regular grid
// (row by row, x fastest) spanning the rectangle rect = (x min, y min, x max, y max), whose
// corner points sit on the rectangle's corners; the edge values outside it.
float ground_height(__global const float *restrict ground,
                    const uint2 dims,
                    const float4 rect,
                    const float x,
                    const float y)
{
    const float u = clamp((x - rect.x) / (rect.z - rect.x), 0.0f, 1.0f) * (float)(dims.x - 1u);
    const float v = clamp((y - rect.y) / (rect.w - rect.y), 0.0f, 1.0f) * (float)(dims.y - 1u);
    const uint i = min((uint)u, dims.x - 2u);
    const uint j = min((uint)v, dims.y - 2u);
    const float s = u - (float)i;
    const float t = v - (float)j;
    const uint k = i + dims.x * j;
    const float below = mix(ground[k], ground[k + 1u], s);
    const float above = mix(ground[k + dims.x], ground[k + dims.x + 1u], s);
    return mix(below, above, t);
}

// The wind speed at `h` metres above the ground as a fraction of the speed at the reference
// height (snowsim::scene::Wind::speed_at). profile = (kind, parameter, reference height,
// normaliser): kind 0 is the log profile ln((h + z0) / z0) / ln((zr + z0) / z0) with
// parameter z0 and normaliser 1 / ln((zr + z0) / z0); kind 1 the power law (h / zr)^exponent
// with parameter the exponent; kind 2 uniform. Zero at and below the ground for log and power.
float profile_factor(const float4 profile, const float height)
{
    const float h = fmax(height, 0.0f);
    if (profile.x < 0.5f)
        return log((h + profile.y) / profile.y) * profile.w;
    if (profile.x < 1.5f)
        return h > 0.0f ? pow(h / profile.z, profile.y) : 0.0f;
    return 1.0f;
}

// Places `n` flakes uniformly in the air of the box [lo, hi): x and y over the box, z between
// the ground and the top; radii in [radius.x, radius.y).
__kernel void flakes_init(__global float4 *restrict particles,
                          const uint n,
                          const uint seed,
                          const float4 lo,
                          const float4 hi,
                          const float2 radius,
                          __global const float *restrict ground,
                          const uint2 ground_dims,
                          const float4 ground_rect)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    const uint k = hash_uint(i ^ hash_uint(seed)) * 4u;
    const float4 size = hi - lo;
    const float x = lo.x + size.x * unit_random(k);
    const float y = lo.y + size.y * unit_random(k + 1u);
    const float g = clamp(ground_height(ground, ground_dims, ground_rect, x, y), lo.z, hi.z);
    particles[i] = (float4)(x,
                            y,
                            g + (hi.z - g) * unit_random(k + 2u),
                            radius.x + (radius.y - radius.x) * unit_random(k + 3u));
}

// Moves each flake by `dt` seconds at simulation time `time`: falls at `fall * radius` metres
// per second (larger flakes fall faster), drifts with the wind `wind.xyz` (its velocity at the
// reference height) scaled by `profile_factor` at the flake's height above the ground,
// flutters with amplitude `wind.w` metres per second. Flakes that leave through a side wrap to
// the opposite side; flakes that reach the ground come back in at the top (and flakes above
// the top come back in just above the ground).
__kernel void flakes_step(__global float4 *restrict particles,
                          const uint n,
                          const float dt,
                          const float time,
                          const float4 lo,
                          const float4 hi,
                          const float4 wind,
                          const float4 profile,
                          const float fall,
                          __global const float *restrict ground,
                          const uint2 ground_dims,
                          const float4 ground_rect)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    float4 p = particles[i];
    const float phase = 6.2831853f * unit_random(i * 7u + 3u);
    const float speed = fall * p.w;
    float g = clamp(ground_height(ground, ground_dims, ground_rect, p.x, p.y), lo.z, hi.z);
    const float drift = profile_factor(profile, p.z - g);
    p.x += (wind.x * drift + wind.w * sin(1.7f * time + phase)) * dt;
    p.y += (wind.y * drift + wind.w * cos(1.3f * time + phase)) * dt;
    p.z += (wind.z * drift - speed) * dt;
    const float4 size = hi - lo;
    p.x = wrap(p.x, lo.x, size.x);
    p.y = wrap(p.y, lo.y, size.y);
    g = clamp(ground_height(ground, ground_dims, ground_rect, p.x, p.y), lo.z, hi.z);
    const float air = fmax(hi.z - g, 1e-3f);
    if (p.z < g)
        p.z = hi.z - fmod(g - p.z, air);
    else if (p.z >= hi.z)
        p.z = g + fmod(p.z - hi.z, air);
    particles[i] = p;
}

// Writes the debug view of the wind profile over `dims.x * dims.y * dims.z` sample points:
// out[2i] = (position, 1), out[2i + 1] = (velocity, pressure). Horizontally the points are the
// centres of a dims.x × dims.y grid over the box [lo, hi); vertically level k sits at the
// fraction ((k + 0.5) / dims.z)^2 of the air between the ground and the top (closer together
// near the ground, where the profile changes most). The velocity is `wind.xyz` (at the
// reference height) times `profile_factor` at the point's height above the ground; the
// pressure is hydrostatic, `p0 * exp(-z / scale_height)`.
__kernel void wind_profile(__global float4 *restrict out,
                           const uint4 dims,
                           const float4 lo,
                           const float4 hi,
                           const float4 wind,
                           const float4 profile,
                           const float p0,
                           const float scale_height,
                           __global const float *restrict ground,
                           const uint2 ground_dims,
                           const float4 ground_rect)
{
    const uint i = get_global_id(0);
    const uint n = dims.x * dims.y * dims.z;
    if (i >= n)
        return;
    const uint ix = i % dims.x;
    const uint iy = (i / dims.x) % dims.y;
    const uint iz = i / (dims.x * dims.y);
    const float4 size = hi - lo;
    const float x = lo.x + size.x * ((float)ix + 0.5f) / (float)dims.x;
    const float y = lo.y + size.y * ((float)iy + 0.5f) / (float)dims.y;
    const float g = clamp(ground_height(ground, ground_dims, ground_rect, x, y), lo.z, hi.z);
    float level = ((float)iz + 0.5f) / (float)dims.z;
    level *= level;
    const float z = g + (hi.z - g) * level;
    const float f = profile_factor(profile, z - g);
    out[2u * i] = (float4)(x, y, z, 1.0f);
    out[2u * i + 1u] = (float4)(wind.x * f, wind.y * f, wind.z * f, p0 * exp(-z / scale_height));
}
