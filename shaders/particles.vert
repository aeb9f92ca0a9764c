#version 330 core
// Snow parcels straight from the buffer OpenCL writes: xyz position, w radius in metres,
// handed to particles.geom, which draws each as one point sprite or, near the camera, as
// the flakes it stands for.

layout(location = 0) in vec4 a_particle;

out vec4 v_particle;

void main()
{
    v_particle = a_particle;
}
