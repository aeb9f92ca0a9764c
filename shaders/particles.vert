#version 330 core
// Snow particles straight from the buffer OpenCL writes: xyz position, w radius in metres.
// Each is a point sprite whose diameter in pixels is the projected diameter of its radius,
// never below the floor `u_size_range.x`. A flake drawn larger than it projects keeps the
// light it would have: its opacity is its true footprint over the drawn one (alpha by
// coverage), so a far flake is a faint dot rather than a white square.

layout(location = 0) in vec4 a_particle;

uniform mat4 u_view;
uniform mat4 u_proj;
uniform float u_point_scale;   // viewport height / (2 tan(fovy / 2))
uniform vec2 u_size_range;     // smallest and largest sprite diameter in pixels

out float v_coverage;

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
}
