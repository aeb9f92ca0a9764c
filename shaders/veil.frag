#version 330 core
// The veil of falling snow over the terrain and the sky (drawn after the terrain, before the
// flakes, which veil themselves in particles.vert and splat.frag). In linear light, a pixel
// at distance d along its view ray becomes
//     colour * T + u_veil_colour * (1 - T),   T = exp(-tau),
// by blending (source alpha 1 - T over the frame): the light of what is behind, dimmed by
// the flakes in between, plus the light they scatter towards the eye. d comes from the
// frame's depth (u_depth, copied from the depth buffer; window depth in [0, 1]) through the
// inverse view-projection; the sky (depth 1) is at u_sky_distance.
//
// tau is the optical depth along the ray: u_beta * d for a uniform snowfall, times the mean of
// the relative density u_density (a 3-D texture over the box u_density_lo..u_density_hi, 1
// outside it) over VEIL_STEPS samples along the ray when u_density_field is on.
// optical_depth() is the same in particles.vert and splat.frag.

uniform sampler2D u_depth;
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

const int VEIL_STEPS = 32;

float optical_depth(vec3 a, vec3 b)
{
    float d = distance(a, b);
    if (!u_density_field)
        return u_beta * d;
    float sum = 0.0;
    for (int i = 0; i < VEIL_STEPS; ++i) {
        vec3 q = mix(a, b, (float(i) + 0.5) / float(VEIL_STEPS));
        vec3 uvw = (q - u_density_lo) / (u_density_hi - u_density_lo);
        bool inside = all(greaterThanEqual(uvw, vec3(0.0))) && all(lessThanEqual(uvw, vec3(1.0)));
        sum += inside ? textureLod(u_density, uvw, 0.0).r : 1.0;
    }
    return u_beta * d * sum / float(VEIL_STEPS);
}

void main()
{
    ivec2 size = textureSize(u_depth, 0);
    float z = texelFetch(u_depth, ivec2(gl_FragCoord.xy), 0).r;
    vec2 ndc = gl_FragCoord.xy / vec2(size) * 2.0 - 1.0;
    vec4 w = u_inv_view_proj * vec4(ndc, z * 2.0 - 1.0, 1.0);
    vec3 p = w.xyz / w.w;
    if (z >= 1.0) {
        vec4 far = u_inv_view_proj * vec4(ndc, 1.0, 1.0);
        p = u_eye + normalize(far.xyz / far.w - u_eye) * u_sky_distance;
    }
    float t = exp(-optical_depth(u_eye, p));
    o_colour = vec4(u_veil_colour, 1.0 - t);
}
