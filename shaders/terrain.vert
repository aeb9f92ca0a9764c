#version 330 core
// Terrain surface: world-space position, normal and the snow depth lying on each vertex.

layout(location = 0) in vec3 a_position;
layout(location = 1) in vec3 a_normal;
layout(location = 2) in float a_snow_depth;

uniform mat4 u_view_proj;

out vec3 v_normal;
out float v_snow_depth;

void main()
{
    v_normal = a_normal;
    v_snow_depth = a_snow_depth;
    gl_Position = u_view_proj * vec4(a_position, 1.0);
}
