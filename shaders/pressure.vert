#version 330 core
// Pressure debug view: a square at each sample point, yellow for low pressure and red for
// high (thesis Figure 6.9), sized in metres like the particles.

layout(location = 0) in vec4 a_sample;  // sample position (xyz)
layout(location = 1) in vec4 a_value;   // wind velocity (xyz), pressure (w)

uniform mat4 u_view;
uniform mat4 u_proj;
uniform float u_point_scale;
uniform float u_size;            // square side in metres
uniform vec2 u_pressure_range;   // pressure drawn yellow, pressure drawn red

out vec3 v_colour;

void main()
{
    vec4 eye = u_view * vec4(a_sample.xyz, 1.0);
    gl_Position = u_proj * eye;
    gl_PointSize = clamp(u_size * u_point_scale / max(-eye.z, 1e-3), 1.0, 64.0);
    float span = max(u_pressure_range.y - u_pressure_range.x, 1e-6);
    float t = clamp((a_value.w - u_pressure_range.x) / span, 0.0, 1.0);
    v_colour = mix(vec3(1.0, 0.95, 0.1), vec3(0.9, 0.05, 0.0), t);
}
