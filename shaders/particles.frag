#version 330 core
// A round, nearly white flake, slightly brighter in its middle, with the opacity of its
// coverage (see particles.geom) and a soft rim one tenth of its radius wide, seen through the
// snow between it and the eye: its light times the transmittance, plus the veil's light.

uniform vec3 u_snow_colour;
uniform vec3 u_veil_colour;

in float v_coverage;
in float v_transmittance;

out vec4 o_colour;

void main()
{
    vec2 c = 2.0 * gl_PointCoord - 1.0;
    float r2 = dot(c, c);
    if (r2 > 1.0)
        discard;
    float rim = 1.0 - smoothstep(0.81, 1.0, r2);
    vec3 flake = u_snow_colour * (0.92 + 0.08 * sqrt(1.0 - r2));
    o_colour = vec4(mix(u_veil_colour, flake, v_transmittance), v_coverage * rim);
}
