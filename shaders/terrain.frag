#version 330 core
// Lambert-lit terrain: grass on gentle slopes, rock on steep ones, blended to white where the
// snow depth reaches u_snow_full_depth.

in vec3 v_normal;
in float v_snow_depth;

uniform vec3 u_light_dir;       // direction the light travels, normalised
uniform vec3 u_grass_colour;
uniform vec3 u_rock_colour;
uniform vec3 u_snow_colour;
uniform float u_snow_full_depth; // depth in metres at which the ground is all white
uniform float u_ambient;

out vec4 o_colour;

void main()
{
    vec3 n = normalize(v_normal);
    float steep = smoothstep(0.75, 0.55, n.z); // z is up
    vec3 ground = mix(u_grass_colour, u_rock_colour, steep);
    float snow = clamp(v_snow_depth / max(u_snow_full_depth, 1e-6), 0.0, 1.0);
    vec3 albedo = mix(ground, u_snow_colour, snow);
    float diffuse = max(dot(n, -u_light_dir), 0.0);
    o_colour = vec4(albedo * (u_ambient + (1.0 - u_ambient) * diffuse), 1.0);
}
