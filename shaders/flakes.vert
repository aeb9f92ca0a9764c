#version 330 core
// The flakes near the camera (render/near.rs), generated here from gl_InstanceID: nothing is
// uploaded per flake, nothing is done per flake on the CPU.
//
// Placement. Slot j (0..u_slots-1) of every cell stands for the flakes of diameter stratum j:
// D in [D0 + j/M (D1 - D0), D0 + (j+1)/M (D1 - D0)], falling at v_t (D_j / Dmean)^0.2 with D_j
// the stratum's middle (the fall speed's ratio quantised to k_j / 1024). Each slot has its
// own lattice of cubic cells of side u_cell that moves with the air: with the wind u_wind and
// down at the slot's fall speed. A flake is the pair (slot, cell of that moving lattice): a
// hash of the cell's integer coordinates and the slot places it in its cell, sets its exact
// diameter within the stratum and decides whether it exists (with probability
// u_lambda * rho(p) / u_slots, rho the relative density at its position, so the flakes are a
// Poisson field of mean density n rho, thinned where the veil's density is low). A flake
// keeps its identity as long as its cell is within the block of u_cells^3 cells around the
// camera: it moves exactly with its lattice, frame to frame, and nothing is redrawn at random.
//
// The moving lattice's position of the eye, E = (eye - u t) / u_cell (in cells), comes split
// into an integer and a fraction so that hours of simulated time lose no precision: the
// horizontal part and the eye's height from the CPU (double precision), the fall as
// k_j * u_fall_int / 1024 in integers plus the fraction.
//
// Drawing. The flake at p now and at p - u_j * u_exposure (the frame's exposure) projects to
// a screen segment; it is drawn as a capsule around that segment, u_width wide at least (the
// pixel floor), its true projected diameter P = D * u_point_scale / depth otherwise. Its
// light, a disc of P pixels, is spread over the capsule: the opacity is
// (pi/4 P^2) / (w L + pi/4 w^2) (L the streak's length, w the capsule's width), at most 1, as
// particles.geom's coverage. It is lit like the flat snow of the cover (u_flake_colour),
// veiled by its own distance with the density at the flake (exp(-beta d rho(p)); exact for a
// uniform snowfall), and fades out over the last fifth of u_radius, beyond which the veil
// stands for the flakes. A flake nearer than half a metre is not drawn (out of any focus).
//
// The probe (transform feedback, POINTS, one vertex per instance) reads v_probe: the flake's
// world position and, in w, its diameter when it is drawn (exists and within u_radius), else 0.

uniform mat4 u_view_proj;
uniform vec2 u_viewport;
uniform float u_point_scale;
uniform float u_width;        // the pixel floor
uniform vec3 u_eye;
uniform ivec3 u_base_int;     // floor of (eye_x - w_x t, eye_y - w_y t, eye_z) / u_cell
uniform vec3 u_base_frac;     // and the fractions
uniform uint u_fall_int;      // floor(v_t t / u_cell)
uniform float u_fall_frac;    // and the fraction
uniform int u_cells;          // cells per side of the block
uniform int u_slots;          // slots per cell
uniform float u_cell;         // cell side, m
uniform float u_lambda;       // n * u_cell^3: flakes per cell at relative density 1
uniform vec2 u_diameter;      // D0, D1, m
uniform float u_fall_speed;   // v_t of the mean diameter, m/s
uniform vec3 u_wind;          // m/s
uniform float u_exposure;     // s
uniform float u_radius;       // m
uniform float u_beta;
uniform sampler3D u_density;
uniform bool u_density_field;
uniform vec3 u_density_lo;
uniform vec3 u_density_hi;

out vec2 v_local;       // pixels from the streak's middle: along it, across it
out float v_half_length;
out float v_half_width;
out float v_alpha;
out float v_transmittance;
out vec4 v_probe;

uvec4 pcg4d(uvec4 v)
{
    v = v * 1664525u + 1013904223u;
    v.x += v.y * v.w; v.y += v.z * v.x; v.z += v.x * v.y; v.w += v.y * v.z;
    v ^= v >> 16u;
    v.x += v.y * v.w; v.y += v.z * v.x; v.z += v.x * v.y; v.w += v.y * v.z;
    return v;
}

vec4 unit(uvec4 h)
{
    return vec4(h >> 8u) * (1.0 / 16777216.0);
}

float relative_density(vec3 p)
{
    if (!u_density_field)
        return 1.0;
    vec3 uvw = (p - u_density_lo) / (u_density_hi - u_density_lo);
    bool inside = all(greaterThanEqual(uvw, vec3(0.0))) && all(lessThanEqual(uvw, vec3(1.0)));
    return inside ? textureLod(u_density, uvw, 0.0).r : 1.0;
}

const vec4 NOWHERE = vec4(2.0, 2.0, 2.0, 1.0);

void main()
{
    int id = gl_InstanceID;
    int j = id % u_slots;
    int cell = id / u_slots;
    ivec3 i = ivec3(cell % u_cells, (cell / u_cells) % u_cells, cell / (u_cells * u_cells));

    // The slot's stratum, its fall speed.
    float width = (u_diameter.y - u_diameter.x) / float(u_slots);
    float middle = u_diameter.x + (float(j) + 0.5) * width;
    float mean = 0.5 * (u_diameter.x + u_diameter.y);
    uint k = uint(round(1024.0 * pow(middle / mean, 0.2)));
    float fall = u_fall_speed * float(k) / 1024.0;

    // The eye in the slot's lattice.
    uint q = k * u_fall_int;
    float zf = u_base_frac.z + float(q & 1023u) / 1024.0 + float(k) / 1024.0 * u_fall_frac;
    float carry = floor(zf);
    ivec3 e_int = ivec3(u_base_int.xy, u_base_int.z + int(q >> 10u) + int(carry));
    vec3 e_frac = vec3(u_base_frac.xy, zf - carry);

    ivec3 c = e_int - ivec3(u_cells / 2) + i;
    uvec4 h1 = pcg4d(uvec4(uvec3(c), uint(j)));
    uvec4 h2 = pcg4d(h1 ^ uvec4(0x9e3779b9u, 0x85ebca6bu, 0xc2b2ae35u, 0x27d4eb2fu));
    vec4 r1 = unit(h1);
    vec4 r2 = unit(h2);

    vec3 offset = (vec3(i - ivec3(u_cells / 2)) + r1.yzw - e_frac) * u_cell;
    vec3 p = u_eye + offset;
    float d = length(offset);
    float diameter = u_diameter.x + (float(j) + r2.x) * width;
    bool exists = r1.x * float(u_slots) < u_lambda * relative_density(p) && d < u_radius;
    v_probe = vec4(p, exists ? diameter : 0.0);

    vec3 velocity = u_wind + vec3(0.0, 0.0, -fall);
    vec4 now = u_view_proj * vec4(p, 1.0);
    vec4 before = u_view_proj * vec4(p - velocity * u_exposure, 1.0);
    // Flakes nearer than half a metre are far out of any lens's focus: a blur, not drawn.
    float near = 0.5;
    if (!exists || now.w < near || before.w < near) {
        gl_Position = NOWHERE;
        v_local = vec2(0.0);
        v_half_length = 0.0;
        v_half_width = 0.0;
        v_alpha = 0.0;
        v_transmittance = 1.0;
        return;
    }
    vec2 a = (now.xy / now.w * 0.5 + 0.5) * u_viewport;
    vec2 b = (before.xy / before.w * 0.5 + 0.5) * u_viewport;
    float length_px = distance(a, b);
    vec2 along = length_px > 1e-4 ? (a - b) / length_px : vec2(1.0, 0.0);
    vec2 across = vec2(-along.y, along.x);
    float projected = diameter * u_point_scale / now.w;
    float w = max(projected, u_width);
    const float QUARTER_PI = 0.78539816;
    float coverage = QUARTER_PI * projected * projected / (w * length_px + QUARTER_PI * w * w);
    float fade = 1.0 - smoothstep(0.8 * u_radius, u_radius, d);

    // The corner: triangle strip (-1,-1), (1,-1), (-1,1), (1,1) in (along, across).
    vec2 corner = vec2(float(gl_VertexID & 1), float(gl_VertexID >> 1)) * 2.0 - 1.0;
    v_half_length = 0.5 * length_px;
    v_half_width = 0.5 * w;
    v_local = corner * vec2(v_half_length + v_half_width, v_half_width);
    vec2 pixel = 0.5 * (a + b) + along * v_local.x + across * v_local.y;
    vec2 ndc = pixel / u_viewport * 2.0 - 1.0;
    // Depth clamped short of the far plane's opposite: a flake between half a metre and the
    // near plane is drawn in front of everything rather than clipped away.
    gl_Position = vec4(ndc * now.w, max(now.z, -0.99999 * now.w), now.w);
    v_alpha = min(coverage, 1.0) * fade;
    v_transmittance = exp(-u_beta * d * relative_density(p));
}
