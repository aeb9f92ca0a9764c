#version 330 core
// Snow particles straight from the buffer OpenCL writes: xyz position, w radius in metres.
// Each is a point sprite whose diameter in pixels is the projected diameter of its radius.

layout(location = 0) in vec4 a_particle;

uniform mat4 u_view;
uniform mat4 u_proj;
uniform float u_point_scale;   // viewport height / (2 tan(fovy / 2))
uniform vec2 u_size_range;     // smallest and largest sprite diameter in pixels

void main()
{
    vec4 eye = u_view * vec4(a_particle.xyz, 1.0);
    gl_Position = u_proj * eye;
    float distance = max(-eye.z, 1e-3);
    gl_PointSize = clamp(2.0 * a_particle.w * u_point_scale / distance,
                         u_size_range.x, u_size_range.y);
}
