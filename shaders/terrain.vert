#version 330 core
// Terrain surface: world-space position, normal and the snow depth lying on each vertex: the
// scene's initial cover plus what the particles laid (a buffer OpenCL writes; 0 without one).

layout(location = 0) in vec3 a_position;
layout(location = 1) in vec3 a_normal;
layout(location = 2) in float a_snow_depth;
layout(location = 3) in float a_laid_depth;

uniform mat4 u_view_proj;

out vec3 v_normal;
out float v_snow_depth;

void main()
{
    v_normal = a_normal;
    v_snow_depth = a_snow_depth + a_laid_depth;
    gl_Position = u_view_proj * vec4(a_position, 1.0);
}
