#version 330 core
// Lit terrain: grass on gentle slopes, rock on steep ones, under a snow cover whose share of
// the ground grows with the depth, smoothstep(u_snow_cover.x, u_snow_cover.y, depth): no noise,
// the same depth gives the same colour everywhere (a 2 cm dusting on the default [0, 0.10] m
// covers 10 % of the ground). Lambert light from the sun, times the fraction of the sun the
// shadow map sees (one hardware-filtered lookup), plus the light of the sky: on bare
// ground a white share u_ambient (the look snowsim always had), on snow u_snow_shade (the
// sky's bluish light, what snow in shade gets). Everything is linear RGB times u_exposure,
// then seen through the falling snow between the eye and the ground: the veil,
//     colour * T + u_veil_colour * (1 - T),   T = exp(-optical_depth(u_eye, v_world)),
// computed here rather than in a pass of its own (no depth copy, no second pass over the
// covered pixels); u_beta = 0 is clear air. optical_depth() is the same in veil.frag,
// particles.geom and splat.frag. With u_show_friction (the u* view) the ground's colour is the
// wind's friction velocity at the surface (friction_colour) instead of grass, rock and snow.

in vec3 v_normal;
in float v_snow_depth;
in vec3 v_world;
in float v_friction;

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
uniform bool u_show_friction;    // the u* view: the ground coloured by v_friction
uniform float u_friction_threshold;  // m/s: where the colours turn from cold to warm
uniform vec3 u_eye;
uniform vec3 u_veil_colour;
uniform float u_beta;
uniform sampler3D u_density;
uniform bool u_density_field;
uniform vec3 u_density_lo;
uniform vec3 u_density_hi;

out vec4 o_colour;

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

// The u* view's colour of a friction velocity u over the threshold t: blue (calm) to green
// just under it, yellow at it (the wind starts to lift snow), red at three times it and above.
vec3 friction_colour(float u, float t)
{
    float x = u / max(t, 1e-6);
    if (x < 1.0)
        return mix(vec3(0.10, 0.25, 0.85), vec3(0.20, 0.75, 0.35), x);
    return mix(vec3(0.95, 0.85, 0.15), vec3(0.90, 0.12, 0.08), clamp((x - 1.0) / 2.0, 0.0, 1.0));
}

void main()
{
    vec3 n = normalize(v_normal);
    float steep = smoothstep(0.75, 0.55, n.z); // z is up
    vec3 ground = mix(u_grass_colour, u_rock_colour, steep);
    float cover = smoothstep(u_snow_cover.x, u_snow_cover.y, v_snow_depth);
    if (u_show_friction) {
        ground = friction_colour(v_friction, u_friction_threshold);
        cover = 0.0;
    }
    float sun = max(dot(n, u_sun_dir), 0.0) * sunlit(n);
    vec3 bare = ground * (u_ambient + (1.0 - u_ambient) * sun);
    vec3 snow = u_snow_colour * (u_snow_shade + (1.0 - u_ambient) * sun);
    float t = exp(-optical_depth(u_eye, v_world));
    o_colour = vec4(mix(u_veil_colour, mix(bare, snow, cover) * u_exposure, t), 1.0);
}
