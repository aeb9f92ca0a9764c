#version 330 core
// A near flake (flakes.vert): a capsule around its screen streak, its light spread over it
// (v_alpha), with a soft rim one tenth of its half-width wide as particles.frag's, its colour
// lit like the cover's flat snow and veiled by its own distance.

uniform vec3 u_flake_colour;
uniform vec3 u_veil_colour;

in vec2 v_local;
in float v_half_length;
in float v_half_width;
in float v_alpha;
in float v_transmittance;

out vec4 o_colour;

void main()
{
    float dx = max(abs(v_local.x) - v_half_length, 0.0);
    float r2 = (dx * dx + v_local.y * v_local.y) / max(v_half_width * v_half_width, 1e-12);
    if (r2 > 1.0)
        discard;
    float rim = 1.0 - smoothstep(0.81, 1.0, r2);
    o_colour = vec4(mix(u_veil_colour, u_flake_colour, v_transmittance), v_alpha * rim);
}
