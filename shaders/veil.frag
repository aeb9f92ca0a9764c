#version 330 core
// The veil of falling snow over the sky (sky.vert draws it where the terrain left the cleared
// depth; the terrain veils itself in terrain.frag, the flakes in particles.geom and
// splat.frag). In linear light, a pixel at distance d along its view ray becomes
//     colour * T + u_veil_colour * (1 - T),   T = exp(-tau),
// by blending (source alpha 1 - T over the frame): the light of what is behind, dimmed by
// the flakes in between, plus the light they scatter towards the eye. The sky lies at
// u_sky_distance along the ray through the pixel (u_inv_view_proj: clip -> world,
// u_viewport: the frame's size in pixels).
//
// tau is the optical depth along the ray: u_beta * d for a uniform snowfall, times the mean of
// the relative density u_density (a 3-D texture over the box u_density_lo..u_density_hi, 1
// outside it) over VEIL_STEPS samples along the ray within the box when u_density_field is on.
// optical_depth() is the same in terrain.frag, particles.geom and splat.frag.

uniform vec2 u_viewport;
uniform mat4 u_inv_view_proj;
uniform vec3 u_eye;
uniform float u_sky_distance;
uniform vec3 u_veil_colour;
uniform float u_beta;
uniform sampler3D u_density;
uniform bool u_density_field;
uniform vec3 u_density_lo;
uniform vec3 u_density_hi;

out vec4 o_colour;

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

void main()
{
    vec2 ndc = gl_FragCoord.xy / u_viewport * 2.0 - 1.0;
    vec4 far = u_inv_view_proj * vec4(ndc, 1.0, 1.0);
    vec3 p = u_eye + normalize(far.xyz / far.w - u_eye) * u_sky_distance;
    float t = exp(-optical_depth(u_eye, p));
    o_colour = vec4(u_veil_colour, 1.0 - t);
}
