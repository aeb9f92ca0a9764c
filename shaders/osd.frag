#version 330 core
// The on-screen display's panel: the text's coverage (R8, row 0 the top row, one texel per
// pixel) in u_text_colour over a backdrop of colour u_backdrop.rgb and opacity u_backdrop.a;
// a pixel blends from the backdrop to the text's colour, and to full opacity, by its
// coverage.

uniform sampler2D u_text;
uniform vec4 u_rect;         // left, bottom, right, top in pixels
uniform vec3 u_text_colour;
uniform vec4 u_backdrop;     // colour and opacity

out vec4 o_colour;

void main()
{
    ivec2 size = textureSize(u_text, 0);
    ivec2 p = ivec2(gl_FragCoord.xy - u_rect.xy);
    float coverage = texelFetch(u_text, ivec2(p.x, size.y - 1 - p.y), 0).r;
    o_colour = vec4(mix(u_backdrop.rgb, u_text_colour, coverage),
                    mix(u_backdrop.a, 1.0, coverage));
}
