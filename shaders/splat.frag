#version 330 core
// The splat composite: the image the OpenCL splat kernel wrote (kernels/splat.cl), read as
// GL_RG32UI texels. Texel p is pixel p's 64-bit value (little-endian: .r the low word, RGBA8
// colour with R in the lowest byte; .g the high word, the nearest flake's window depth as float
// bits; all ones when empty). From texel u_coverage_offset on, each texel holds the coverage
// counters of two pixels: the sum of the optical depths -ln(1 - alpha) of the translucent
// flakes on the pixel, in fixed point (u_coverage_one per unit).
//
// Each pixel writes the nearest flake's depth, so the depth test against the terrain hides
// flakes behind it, and its colour, blended with the opacity 1 - exp(-sum) = 1 - prod(1 - alpha)
// (what the same flakes blended as sprites give), or the nearest flake's own alpha when larger
// (an opaque flake adds nothing to the counter).
//
// The colour is seen through the snow between the nearest flake and the eye, as the sprites
// are (particles.geom): its optical depth (optical_depth() as in veil.frag) to the point the
// nearest flake's depth and the pixel give through the inverse view-projection.

uniform usamplerBuffer u_image;
uniform int u_width;
uniform int u_coverage_offset;
uniform float u_coverage_one;
uniform mat4 u_inv_view_proj;
uniform vec2 u_viewport;
uniform vec3 u_eye;
uniform vec3 u_veil_colour;
uniform float u_beta;
uniform sampler3D u_density;
uniform bool u_density_field;
uniform vec3 u_density_lo;
uniform vec3 u_density_hi;

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

out vec4 o_colour;

void main()
{
    ivec2 p = ivec2(gl_FragCoord.xy);
    int i = p.y * u_width + p.x;
    uvec2 texel = texelFetch(u_image, i).rg;
    if (texel.g == 0xFFFFFFFFu)
        discard;
    gl_FragDepth = uintBitsToFloat(texel.g);
    uvec2 counters = texelFetch(u_image, u_coverage_offset + (i >> 1)).rg;
    uint counter = (i & 1) == 0 ? counters.r : counters.g;
    float coverage = 1.0 - exp(-float(counter) / u_coverage_one);
    uint c = texel.r;
    vec4 nearest = vec4(float(c & 0xFFu), float((c >> 8) & 0xFFu), float((c >> 16) & 0xFFu),
                        float(c >> 24)) / 255.0;
    vec2 ndc = gl_FragCoord.xy / u_viewport * 2.0 - 1.0;
    vec4 w = u_inv_view_proj * vec4(ndc, gl_FragDepth * 2.0 - 1.0, 1.0);
    float t = exp(-optical_depth(u_eye, w.xyz / w.w));
    o_colour = vec4(mix(u_veil_colour, nearest.rgb, t), max(nearest.a, coverage));
}
