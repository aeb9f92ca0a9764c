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

uniform usamplerBuffer u_image;
uniform int u_width;
uniform int u_coverage_offset;
uniform float u_coverage_one;

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
    o_colour = vec4(nearest.rgb, max(nearest.a, coverage));
}
