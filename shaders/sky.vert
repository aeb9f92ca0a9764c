#version 330 core
// One triangle that covers the whole viewport at the far plane (window depth 1), for the
// veil over the sky (veil.frag): drawn with GL_LEQUAL and no depth writes after the terrain,
// it shades only the pixels the terrain left at the cleared depth. No vertex buffer: the
// corners come from gl_VertexID, as in splat.vert.

void main()
{
    vec2 corner = vec2(float((gl_VertexID << 1) & 2), float(gl_VertexID & 2));
    gl_Position = vec4(corner * 2.0 - 1.0, 1.0, 1.0);
}
