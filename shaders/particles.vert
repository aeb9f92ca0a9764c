#version 330 core
// Snow particles straight from the buffer OpenCL writes: xyz position, w radius in metres.
// Each is a point sprite whose diameter in pixels is the projected diameter of its radius,
// never below the floor `u_size_range.x`. A flake drawn larger than it projects keeps the
// light it would have: its opacity is its true footprint over the drawn one (alpha by
// coverage), so a far flake is a faint dot rather than a white square. The flake is seen
// through the snow between it and the eye: v_transmittance = exp(-tau) of its optical depth
// (optical_depth() as in veil.frag), and particles.frag draws its colour veiled by it.

layout(location = 0) in vec4 a_particle;

uniform mat4 u_view;
uniform mat4 u_proj;
uniform float u_point_scale;   // viewport height / (2 tan(fovy / 2))
uniform vec2 u_size_range;     // smallest and largest sprite diameter in pixels
uniform vec3 u_eye;
uniform float u_beta;
uniform sampler3D u_density;
uniform bool u_density_field;
uniform vec3 u_density_lo;
uniform vec3 u_density_hi;

out float v_coverage;
out float v_transmittance;

const int VEIL_STEPS = 32;

float optical_depth(vec3 a, vec3 b)
{
    float d = distance(a, b);
    if (!u_density_field)
        return u_beta * d;
    float sum = 0.0;
    for (int i = 0; i < VEIL_STEPS; ++i) {
        vec3 q = mix(a, b, (float(i) + 0.5) / float(VEIL_STEPS));
        vec3 uvw = (q - u_density_lo) / (u_density_hi - u_density_lo);
        bool inside = all(greaterThanEqual(uvw, vec3(0.0))) && all(lessThanEqual(uvw, vec3(1.0)));
        sum += inside ? textureLod(u_density, uvw, 0.0).r : 1.0;
    }
    return u_beta * d * sum / float(VEIL_STEPS);
}

void main()
{
    vec4 eye = u_view * vec4(a_particle.xyz, 1.0);
    gl_Position = u_proj * eye;
    float distance = max(-eye.z, 1e-3);
    float projected = 2.0 * a_particle.w * u_point_scale / distance;
    float drawn = clamp(projected, u_size_range.x, u_size_range.y);
    gl_PointSize = drawn;
    float ratio = min(projected / drawn, 1.0);
    v_coverage = ratio * ratio;
    v_transmittance = exp(-optical_depth(u_eye, a_particle.xyz));
}
