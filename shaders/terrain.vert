#version 330 core
// Terrain surface raised by its snow. Nothing comes through vertex attributes: gl_VertexID is
// the vertex's index (indexed draw), and everything is fetched from buffer textures:
//   u_vertices  RGBA32F, two texels per vertex: (position, initial snow depth), (normal, 0);
//   u_laid      R32F, the snow the particles laid per vertex (a buffer OpenCL writes; only
//               read when u_has_laid);
//   u_ring_start R32I, n + 1 offsets into u_ring: vertex v's incident triangles are
//               u_ring[u_ring_start[v] .. u_ring_start[v + 1]];
//   u_ring      RG32I, per incident triangle (v, b, c), counter-clockwise from above: (b, c);
//   u_friction  R32F, the wind's friction velocity per vertex, m/s (the u* view; a buffer
//               OpenCL writes, read only when u_show_friction).
// The surface drawn is each vertex raised by its snow depth (position + depth * up), and its
// normal is the covered surface's: the area-weighted sum of the raised incident triangles'
// normals (the CPU's normal when no snow lies, the stored one for a vertex in no triangle).

uniform mat4 u_view_proj;
uniform samplerBuffer u_vertices;
uniform samplerBuffer u_laid;
uniform bool u_has_laid;
uniform isamplerBuffer u_ring_start;
uniform isamplerBuffer u_ring;
uniform samplerBuffer u_friction;
uniform bool u_show_friction;

out vec3 v_normal;
out float v_snow_depth;
out vec3 v_world;
out float v_friction;

float snow_depth(int v)
{
    float d = texelFetch(u_vertices, 2 * v).w;
    if (u_has_laid)
        d += texelFetch(u_laid, v).r;
    return max(d, 0.0);
}

vec3 raised(int v)
{
    return texelFetch(u_vertices, 2 * v).xyz + vec3(0.0, 0.0, snow_depth(v));
}

void main()
{
    int v = gl_VertexID;
    float depth = snow_depth(v);
    vec3 p = texelFetch(u_vertices, 2 * v).xyz + vec3(0.0, 0.0, depth);
    vec3 n = vec3(0.0);
    int end = texelFetch(u_ring_start, v + 1).r;
    for (int i = texelFetch(u_ring_start, v).r; i < end; ++i) {
        ivec2 bc = texelFetch(u_ring, i).rg;
        n += cross(raised(bc.x) - p, raised(bc.y) - p);
    }
    float len = length(n);
    v_normal = len > 0.0 ? n / len : texelFetch(u_vertices, 2 * v + 1).xyz;
    v_snow_depth = depth;
    v_world = p;
    v_friction = u_show_friction ? texelFetch(u_friction, v).r : 0.0;
    gl_Position = u_view_proj * vec4(p, 1.0);
}
