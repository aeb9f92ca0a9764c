// Tree reduction of a float vector, in two kernels of the same shape.
//
// gml_reduce_first reads the input with a grid-stride loop (consecutive work-items read
// consecutive floats), applies GML_TRANSFORM to each value (|x| for L1 and Linf, x*x for L2)
// and folds them with GML_COMBINE; each work-group then folds its work-items' values in local
// memory and writes one partial result. gml_reduce_partials folds those partials the same way,
// without the transform, in one work-group, and writes GML_FINISH of the result (sqrt for L2) to
// output[out_index]: a solver's scalar, left on the device for the kernels that follow.
// GML_NEUTRAL is the identity of GML_COMBINE; the host defines all four.

#define GML_FOLD(TRANSFORM, OUT, FINISH)                                       \
    const uint lid = get_local_id(0);                                          \
    const uint size = get_local_size(0);                                       \
    float acc = GML_NEUTRAL;                                                   \
    for (uint i = get_global_id(0); i < n; i += get_global_size(0)) {          \
        const float x = input[i];                                              \
        acc = GML_COMBINE(acc, TRANSFORM(x));                                  \
    }                                                                          \
    scratch[lid] = acc;                                                        \
    barrier(CLK_LOCAL_MEM_FENCE);                                              \
    for (uint s = size / 2; s > 0; s >>= 1) {                                  \
        if (lid < s)                                                           \
            scratch[lid] = GML_COMBINE(scratch[lid], scratch[lid + s]);        \
        barrier(CLK_LOCAL_MEM_FENCE);                                          \
    }                                                                          \
    if (lid == 0)                                                              \
        output[OUT] = FINISH(scratch[0]);

#define GML_IDENTITY(x) (x)

__kernel void gml_reduce_first(__global const float *restrict input,
                               __global float *restrict output,
                               const uint n,
                               __local float *scratch)
{
    GML_FOLD(GML_TRANSFORM, get_group_id(0), GML_IDENTITY)
}

__kernel void gml_reduce_partials(__global const float *restrict input,
                                  __global float *restrict output,
                                  const uint n,
                                  __local float *scratch,
                                  const uint out_index)
{
    GML_FOLD(GML_IDENTITY, out_index, GML_FINISH)
}
