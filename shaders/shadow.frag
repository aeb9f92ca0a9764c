#version 330 core
// The sun's shadow map: only the depth of the terrain seen from the sun is kept
// (terrain.vert with the sun's matrix), no colour.

void main()
{
}
