// Stand-in particle and wind kernels that drive the renderer until the real simulation exists.
//
// Coordinates: x east, y north, z up, metres (as the scene files).
//
// Particles are float4: xyz is the position in metres, w the flake radius in metres; the
// renderer draws each one as a point sprite of that radius. `flakes_step` lets flakes fall at
// a speed that grows with their radius, drift with a constant wind and flutter sideways, and
// wrap around: a flake that leaves the box [lo, hi) through any side comes back through the
// opposite one. `wind_field` fills the debug view of the wind: one (position, velocity +
// pressure) pair of float4 per sample point of a regular grid, from an analytic swirl.

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

// Places `n` flakes uniformly in the box [lo, hi) with radii in [radius.x, radius.y).
__kernel void flakes_init(__global float4 *restrict particles,
                          const uint n,
                          const uint seed,
                          const float4 lo,
                          const float4 hi,
                          const float2 radius)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    const uint k = hash_uint(i ^ hash_uint(seed)) * 4u;
    const float4 size = hi - lo;
    particles[i] = (float4)(lo.x + size.x * unit_random(k),
                            lo.y + size.y * unit_random(k + 1u),
                            lo.z + size.z * unit_random(k + 2u),
                            radius.x + (radius.y - radius.x) * unit_random(k + 3u));
}

// Moves each flake by `dt` seconds at simulation time `time`: falls at `fall * radius` metres
// per second (larger flakes fall faster), drifts with `wind.xyz`, flutters with amplitude
// `wind.w` metres per second.
__kernel void flakes_step(__global float4 *restrict particles,
                          const uint n,
                          const float dt,
                          const float time,
                          const float4 lo,
                          const float4 hi,
                          const float4 wind,
                          const float fall)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    float4 p = particles[i];
    const float phase = 6.2831853f * unit_random(i * 7u + 3u);
    const float speed = fall * p.w;
    const float flutter = wind.w * sin(1.7f * time + phase);
    p.x += (wind.x + flutter) * dt;
    p.y += (wind.y + wind.w * cos(1.3f * time + phase)) * dt;
    p.z += (wind.z - speed) * dt;
    const float4 size = hi - lo;
    p.x = wrap(p.x, lo.x, size.x);
    p.y = wrap(p.y, lo.y, size.y);
    p.z = wrap(p.z, lo.z, size.z);
    particles[i] = p;
}

// Writes the debug view of an analytic wind over the grid of `dims.x * dims.y * dims.z` sample
// points filling the box [lo, hi): out[2i] = (position, 1), out[2i + 1] = (velocity, pressure).
// A breeze `base.xyz` (horizontal part growing with height) plus a swirl of strength `base.w`
// around a vertical axis that
// circles the middle of the box; the pressure falls with height and dips in the swirl's eye.
__kernel void wind_field(__global float4 *restrict out,
                         const uint4 dims,
                         const float4 lo,
                         const float4 hi,
                         const float4 base,
                         const float time)
{
    const uint i = get_global_id(0);
    const uint n = dims.x * dims.y * dims.z;
    if (i >= n)
        return;
    const uint ix = i % dims.x;
    const uint iy = (i / dims.x) % dims.y;
    const uint iz = i / (dims.x * dims.y);
    const float4 size = hi - lo;
    const float4 pos = (float4)(lo.x + size.x * ((float)ix + 0.5f) / (float)dims.x,
                                lo.y + size.y * ((float)iy + 0.5f) / (float)dims.y,
                                lo.z + size.z * ((float)iz + 0.5f) / (float)dims.z,
                                1.0f);
    const float2 eye = (float2)(lo.x + size.x * (0.5f + 0.2f * cos(0.3f * time)),
                                lo.y + size.y * (0.5f + 0.2f * sin(0.3f * time)));
    const float2 r = (float2)(pos.x, pos.y) - eye;
    const float sigma = 0.25f * fmin(size.x, size.y);
    const float fall_off = exp(-dot(r, r) / (sigma * sigma));
    const float height = (pos.z - lo.z) / size.z;
    const float3 velocity = (float3)(base.x * (0.4f + height),
                                     base.y * (0.4f + height),
                                     base.z)
                          + base.w * fall_off * (float3)(-r.y, r.x, 0.0f) / sigma;
    const float pressure = (1.0f - fall_off) * (1.0f - 0.5f * height);
    out[2u * i] = pos;
    out[2u * i + 1u] = (float4)(velocity, pressure);
}
