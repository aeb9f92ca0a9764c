#version 330 core
// One triangle that covers the whole viewport (vertices at (-1,-1), (3,-1), (-1,3) in NDC),
// for the splat composite (splat.frag). No vertex buffer: the corners come from gl_VertexID.

void main()
{
    vec2 corner = vec2(float((gl_VertexID << 1) & 2), float(gl_VertexID & 2));
    gl_Position = vec4(corner * 2.0 - 1.0, 0.0, 1.0);
}
