#version 330 core
// The splat composite: the image the OpenCL splat kernel wrote (kernels/splat.cl), one 64-bit
// value per pixel read as GL_RG32UI texels (little-endian: .r the low word, RGBA8 colour with
// R in the lowest byte; .g the high word, the nearest flake's window depth as float bits; all
// ones when empty). Each pixel writes the flake's depth, so the depth test against the terrain
// hides flakes behind it, and its colour, blended by its alpha (coverage) as sprites are.

uniform usamplerBuffer u_image;
uniform int u_width;

out vec4 o_colour;

void main()
{
    ivec2 p = ivec2(gl_FragCoord.xy);
    uvec2 texel = texelFetch(u_image, p.y * u_width + p.x).rg;
    if (texel.g == 0xFFFFFFFFu)
        discard;
    gl_FragDepth = uintBitsToFloat(texel.g);
    uint c = texel.r;
    o_colour = vec4(float(c & 0xFFu), float((c >> 8) & 0xFFu), float((c >> 16) & 0xFFu),
                    float(c >> 24)) / 255.0;
}
