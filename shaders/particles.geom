#version 330 core
// Each parcel from particles.vert as point sprites. Far away one sprite whose diameter in
// pixels is the projected diameter of its radius, never below the floor `u_size_range.x`. A
// flake drawn larger than it projects keeps the light it would have: its opacity is its true
// footprint over the drawn one (alpha by coverage), so a far flake is a faint dot rather than
// a white square. A sprite is seen through the snow between it and the eye: v_transmittance
// = exp(-tau) of its optical depth (optical_depth() as in veil.frag), and particles.frag
// draws its colour veiled by it.
//
// A parcel nearer to the eye than u_cloud.z metres is drawn as u_cloud.x flakes instead (see
// snowsim::particle::ParcelFlakes): spread by a hash of its radius's bits over a ball of
// radius u_cloud.y, shrinking to nothing between half that distance and it, each a sprite of
// the parcel's radius over sqrt(u_cloud.x). The splat kernel (kernels/splat.cl) spreads them
// with the same hash. u_cloud.x = 0 draws every parcel as one sprite (the splat path's
// overflow sprites, which are flakes already).

layout(points) in;
layout(points, max_vertices = 64) out;

in vec4 v_particle[];

uniform mat4 u_view;
uniform mat4 u_proj;
uniform float u_point_scale;   // viewport height / (2 tan(fovy / 2))
uniform vec2 u_size_range;     // smallest and largest sprite diameter in pixels
uniform vec4 u_cloud;          // flakes per near parcel, ball radius (m), distance (m)
uniform vec3 u_eye;
uniform float u_beta;
uniform sampler3D u_density;
uniform bool u_density_field;
uniform vec3 u_density_lo;
uniform vec3 u_density_hi;

out float v_coverage;
out float v_transmittance;

const int VEIL_STEPS = 2;

// The optical depth from a to b: uniform outside the density box, and inside it the mean of
// VEIL_STEPS samples of the relative density along the part of the segment within the box
// (a slab test clips it), so no step is spent where the density is 1 by definition.
float optical_depth(vec3 a, vec3 b)
{
    float d = distance(a, b);
    if (!u_density_field || d <= 0.0)
        return u_beta * d;
    vec3 dir = (b - a) / d;
    vec3 safe = mix(dir, vec3(1e-6), lessThan(abs(dir), vec3(1e-6)));
    vec3 t0 = (u_density_lo - a) / safe;
    vec3 t1 = (u_density_hi - a) / safe;
    vec3 near = min(t0, t1);
    vec3 far = max(t0, t1);
    float enter = clamp(max(max(near.x, near.y), near.z), 0.0, d);
    float leave = clamp(min(min(far.x, far.y), far.z), 0.0, d);
    float inside = max(leave - enter, 0.0);
    float sum = 0.0;
    for (int i = 0; i < VEIL_STEPS; ++i) {
        vec3 q = a + dir * (enter + inside * (float(i) + 0.5) / float(VEIL_STEPS));
        vec3 uvw = clamp((q - u_density_lo) / (u_density_hi - u_density_lo), 0.0, 1.0);
        sum += textureLod(u_density, uvw, 0.0).r;
    }
    return u_beta * ((d - inside) + inside * sum / float(VEIL_STEPS));
}

// lowbias32, as splat_hash in kernels/splat.cl.
uint cloud_hash(uint x)
{
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

// Flake j of the parcel seeded `seed`: a point of the unit ball, uniform in volume.
vec3 cloud_point(uint seed, uint j)
{
    vec3 u = vec3(cloud_hash(seed ^ cloud_hash(3u * j + 1u)),
                  cloud_hash(seed ^ cloud_hash(3u * j + 2u)),
                  cloud_hash(seed ^ cloud_hash(3u * j + 3u))) / 4294967296.0;
    float z = 2.0 * u.x - 1.0;
    float ring = sqrt(max(1.0 - z * z, 0.0));
    float phi = 6.28318530718 * u.y;
    return pow(u.z, 1.0 / 3.0) * vec3(ring * cos(phi), ring * sin(phi), z);
}

void sprite(vec3 at, float radius)
{
    vec4 eye = u_view * vec4(at, 1.0);
    gl_Position = u_proj * eye;
    float distance = max(-eye.z, 1e-3);
    float projected = 2.0 * radius * u_point_scale / distance;
    float drawn = clamp(projected, u_size_range.x, u_size_range.y);
    gl_PointSize = drawn;
    float ratio = min(projected / drawn, 1.0);
    v_coverage = ratio * ratio;
    v_transmittance = exp(-optical_depth(u_eye, at));
    EmitVertex();
}

void main()
{
    vec4 p = v_particle[0];
    int flakes = int(u_cloud.x);
    float d = distance(p.xyz, u_eye);
    if (flakes == 0 || !(d < u_cloud.z)) {
        sprite(p.xyz, p.w);
        return;
    }
    float spread = u_cloud.y * clamp(2.0 * (1.0 - d / u_cloud.z), 0.0, 1.0);
    float radius = p.w * inversesqrt(float(flakes));
    uint seed = floatBitsToUint(p.w);
    for (int j = 0; j < flakes; ++j)
        sprite(p.xyz + spread * cloud_point(seed, uint(j)), radius);
}
