#version 330 core
// The on-screen display's panel: a rectangle of the window, u_rect = (left, bottom, right,
// top) in pixels from the bottom-left corner, u_viewport its size. No vertex buffer: the
// corners of a triangle strip come from gl_VertexID.

uniform vec4 u_rect;
uniform vec2 u_viewport;

void main()
{
    vec2 corner = vec2(float(gl_VertexID & 1), float((gl_VertexID >> 1) & 1));
    vec2 pixel = mix(u_rect.xy, u_rect.zw, corner);
    gl_Position = vec4(pixel / u_viewport * 2.0 - 1.0, 0.0, 1.0);
}
