#version 330 core
// Wind debug view: one short line per sample point, drawn instanced with two vertices per
// instance, along the wind, its length and colour growing with the speed (thesis Figure 6.10).

layout(location = 0) in vec4 a_sample;  // sample position (xyz)
layout(location = 1) in vec4 a_value;   // wind velocity (xyz), pressure (w)

uniform mat4 u_view_proj;
uniform float u_seconds;    // a line is the path travelled in this many seconds…
uniform float u_max_length; // …but never longer than this, in metres
uniform float u_speed_max;  // speed drawn red

out vec3 v_colour;

vec3 speed_ramp(float t)
{
    // blue → cyan → green → yellow → red
    t = clamp(t, 0.0, 1.0) * 4.0;
    vec3 c[5] = vec3[5](vec3(0.1, 0.2, 1.0), vec3(0.0, 0.9, 1.0), vec3(0.1, 0.9, 0.2),
                        vec3(1.0, 0.9, 0.0), vec3(1.0, 0.1, 0.0));
    int i = min(int(t), 3);
    return mix(c[i], c[i + 1], t - float(i));
}

void main()
{
    vec3 v = a_value.xyz;
    float speed = length(v);
    vec3 step = v * u_seconds;
    float len = length(step);
    if (len > u_max_length)
        step *= u_max_length / len;
    vec3 p = a_sample.xyz + (gl_VertexID == 0 ? vec3(0.0) : step);
    v_colour = speed_ramp(speed / max(u_speed_max, 1e-6));
    gl_Position = u_view_proj * vec4(p, 1.0);
}
