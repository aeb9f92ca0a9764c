// Device copy bandwidth: the reference the mesh kernels are measured against.
// One float4 per work-item, consecutive work-items on consecutive values (coalesced).
__kernel void copy_float4(__global float4 *restrict dst, __global const float4 *restrict src,
                          const uint n)
{
    const uint i = get_global_id(0);
    if (i < n)
        dst[i] = src[i];
}
