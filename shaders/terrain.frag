#version 330 core
// Lit terrain: grass on gentle slopes, rock on steep ones, under a snow cover whose share of
// the ground grows with the depth, smoothstep(u_snow_cover.x, u_snow_cover.y, depth): no noise,
// the same depth gives the same colour everywhere (a 2 cm dusting on the default [0, 0.10] m
// covers 10 % of the ground). Lambert light from the sun, times the fraction of the sun the
// shadow map sees (3 x 3 percentage-closer filtering), plus the light of the sky: on bare
// ground a white share u_ambient (the look snowsim always had), on snow u_snow_shade (the
// sky's bluish light, what snow in shade gets). Everything is linear RGB times u_exposure.

in vec3 v_normal;
in float v_snow_depth;
in vec3 v_world;

uniform vec3 u_sun_dir;          // towards the sun, normalised
uniform vec3 u_grass_colour;
uniform vec3 u_rock_colour;
uniform vec3 u_snow_colour;
uniform vec3 u_snow_shade;       // the sky's light on snow (in shade), linear RGB
uniform vec2 u_snow_cover;       // depths (m) of bare and of fully covered ground
uniform float u_ambient;
uniform float u_exposure;
uniform bool u_shadows;
uniform sampler2DShadow u_shadow_map;
uniform mat4 u_light_view_proj;  // world -> the shadow map's clip space
uniform float u_shadow_offset;   // metres along the normal the lookup starts from (acne)

out vec4 o_colour;

float sunlit(vec3 n)
{
    if (!u_shadows)
        return 1.0;
    vec4 clip = u_light_view_proj * vec4(v_world + u_shadow_offset * n, 1.0);
    vec3 s = clip.xyz / clip.w * 0.5 + 0.5;
    if (any(lessThan(s, vec3(0.0))) || any(greaterThan(s, vec3(1.0))))
        return 1.0;
    // One lookup: the map's linear filter compares the four nearest texels and blends them
    // (hardware percentage-closer filtering), soft over a texel.
    return texture(u_shadow_map, s);
}

void main()
{
    vec3 n = normalize(v_normal);
    float steep = smoothstep(0.75, 0.55, n.z); // z is up
    vec3 ground = mix(u_grass_colour, u_rock_colour, steep);
    float cover = smoothstep(u_snow_cover.x, u_snow_cover.y, v_snow_depth);
    float sun = max(dot(n, u_sun_dir), 0.0) * sunlit(n);
    vec3 bare = ground * (u_ambient + (1.0 - u_ambient) * sun);
    vec3 snow = u_snow_colour * (u_snow_shade + (1.0 - u_ambient) * sun);
    o_colour = vec4(mix(bare, snow, cover) * u_exposure, 1.0);
}
