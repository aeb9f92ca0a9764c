#version 330 core
// A round, nearly white flake, slightly brighter in its middle.

uniform vec3 u_snow_colour;

out vec4 o_colour;

void main()
{
    vec2 c = 2.0 * gl_PointCoord - 1.0;
    float r2 = dot(c, c);
    if (r2 > 1.0)
        discard;
    o_colour = vec4(u_snow_colour * (0.92 + 0.08 * sqrt(1.0 - r2)), 1.0);
}
