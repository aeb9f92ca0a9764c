// STREAM triad on float4: a = b + scale * c.
//
// One work-item per float4; consecutive work-items touch consecutive 16-byte values, so every
// load and store is coalesced. The tail guard lets the global size be rounded up to the
// work-group size chosen for the device.
__kernel void triad(__global float4 *restrict a,
                    __global const float4 *restrict b,
                    __global const float4 *restrict c,
                    const float scale,
                    const uint n)
{
    const uint i = get_global_id(0);
    if (i < n)
        a[i] = b[i] + scale * c[i];
}
