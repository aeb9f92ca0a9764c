// Reductions of a solution field (src/gml/reduce.rs), in one pass or two.
//
// gml_reduce_first: every work-item reads whole loads of GML_LOAD scalars (a float4, a double2,
// a float16: one 16-byte or wider load) with a grid-stride loop, so consecutive work-items read
// consecutive memory (on a GPU; with GML_CHUNKED, on a CPU, each work-item reads a contiguous
// run instead); it transforms each value (|x| for L1 and Linf, x*x for L2, x != 0 for L0,
// the Euclidean norm of each vector in norm mode) and folds it into its accumulators, one per
// lane of the load. The lanes are then folded into GML_OUTS results (one per component of a
// vector field, or one), the work-group folds its work-items' results in local memory and
// writes one partial result per output. Work-item 0 also takes the tail (fewer scalars than
// one load).
// gml_reduce_host / gml_reduce_float / gml_reduce_double: one work-group folds the partials.
// gml_reduce_once_host / _float / _double do both in one launch: the work-group that finishes
// last folds the partials (gml_last_group), which saves the second launch.
// The host variant writes the raw accumulators (value and compensation) for the host to
// finish in double; the others finish on the device (sqrt for L2) and write the result as a
// float or double at out[index], out[index + 1], … for a solver's kernels to read.
//
// The host defines (src/gml/reduce.rs, Plan::defines):
//   GML_T      scalar type of the field (float, double, int)
//   GML_TL     type of one load (float4, double2, int4, float16, …; GML_T when GML_LOAD == 1)
//   GML_LOAD   scalars per load (a multiple of GML_W), GML_VSTORE its vstore when > 1
//   GML_W      components per value, GML_NORM 1 to reduce the norm of each vector
//   GML_OUTS   results: GML_W per component, 1 in norm mode
//   GML_ACC    accumulator type (long for integer sums, min, max, counts; double where the
//              device has fp64; float with Neumaier compensation (GML_COMP 1) where it has not)
//   GML_ACC_INT 1 when GML_ACC is an integer, GML_FP the floating type of norms
//   GML_OP_MIN, GML_OP_MAX, GML_OP_SUM, GML_OP_L0, GML_OP_L1, GML_OP_L2 or GML_OP_LINF
//   GML_FP64   when the device has fp64; GML_CHUNKED 1 on CPU devices.
// min, max and Linf test for NaN explicitly (fmin and fmax would drop it): one NaN makes the
// result NaN. Infinities follow IEEE arithmetic (+inf + -inf is NaN).

#ifdef GML_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

typedef GML_T elem_t;
typedef GML_ACC acc_t;
typedef GML_FP fp_t;

// Accumulators per output: the value, and its compensation when compensated.
#if GML_COMP
#define GML_CS 2
#else
#define GML_CS 1
#endif

// Lanes of a work-item's private accumulators.
#if GML_NORM
#define GML_LANES 1
#else
#define GML_LANES GML_LOAD
#endif

#if GML_ACC_INT
#define GML_ISNAN(x) 0
#define GML_ABS(x) ((x) < 0 ? -(x) : (x))
#else
#define GML_ISNAN(x) isnan(x)
#define GML_ABS(x) fabs(x)
#endif

#if defined(GML_OP_MIN)
#define GML_NEUTRAL (GML_ACC_INT ? (acc_t)LONG_MAX : (acc_t)INFINITY)
#elif defined(GML_OP_MAX)
#define GML_NEUTRAL (GML_ACC_INT ? (acc_t)LONG_MIN : (acc_t)(-INFINITY))
#else
#define GML_NEUTRAL ((acc_t)0)
#endif

// s += x with Neumaier's compensation in c (when compensated).
static inline void gml_add(acc_t *s, acc_t *c, const acc_t x)
{
#if GML_COMP
    const acc_t t = *s + x;
    *c += fabs(*s) >= fabs(x) ? (*s - t) + x : (x - t) + *s;
    *s = t;
#else
    *s += x;
#endif
}

// Folds one transformed value into an accumulator.
static inline void gml_fold(acc_t *s, acc_t *c, const acc_t x)
{
#if defined(GML_OP_MIN)
    *s = ((x < *s) | GML_ISNAN(x)) ? x : *s;
#elif defined(GML_OP_MAX) || defined(GML_OP_LINF)
    *s = ((x > *s) | GML_ISNAN(x)) ? x : *s;
#else
    gml_add(s, c, x);
#endif
}

// Folds accumulator (s2, c2) into (s, c).
static inline void gml_merge(acc_t *s, acc_t *c, const acc_t s2, const acc_t c2)
{
    gml_fold(s, c, s2);
#if GML_COMP
    *c += c2;
#endif
}

// One scalar of the field, transformed (per-component mode).
static inline acc_t gml_transform(const elem_t v)
{
#if defined(GML_OP_L0)
    return v != (elem_t)0 ? (acc_t)1 : (acc_t)0; // NaN counts: it is not zero
#else
    const acc_t x = (acc_t)v;
#if defined(GML_OP_L1) || defined(GML_OP_LINF)
    return GML_ABS(x);
#elif defined(GML_OP_L2)
    return x * x;
#else
    return x;
#endif
#endif
}

// The Euclidean norm of a vector of GML_W scalars, scaled by its largest component so that
// squares cannot overflow; as IEEE's hypot: infinite if a component is, else NaN if one is.
static inline fp_t gml_norm(const elem_t *v)
{
    fp_t m = 0;
    int nan = 0;
    for (int j = 0; j < GML_W; j++) {
        const fp_t a = fabs((fp_t)v[j]);
        nan |= isnan(a);
        m = a > m ? a : m;
    }
    if (isinf(m))
        return m;
    if (nan)
        return (fp_t)NAN;
    if (m == 0)
        return 0;
    fp_t q = 0;
    for (int j = 0; j < GML_W; j++) {
        const fp_t r = (fp_t)v[j] / m;
        q += r * r;
    }
    return m * sqrt(q);
}

// Copies one load into a private array of GML_LOAD scalars.
#if GML_LOAD == 1
#define GML_UNPACK(x, v) ((v)[0] = (x))
#else
#define GML_UNPACK(x, v) GML_VSTORE((x), 0, (v))
#endif

// Folds one load of GML_LOAD scalars into the accumulators.
static inline void gml_take(acc_t *s, acc_t *c, const elem_t *v)
{
#if GML_NORM
    const fp_t y = gml_norm(v);
#if defined(GML_OP_L0)
    gml_fold(s, c, y != 0 ? (acc_t)1 : (acc_t)0);
#elif defined(GML_OP_L2)
    gml_fold(s, c, (acc_t)(y * y));
#else
    gml_fold(s, c, (acc_t)y);
#endif
#else
    for (int j = 0; j < GML_LOAD; j++)
        gml_fold(&s[j], &c[j], gml_transform(v[j]));
#endif
}

#if GML_CHUNKED && !GML_NORM
// The contiguous loop of per-component mode keeps its GML_LOAD lanes of accumulators in one
// OpenCL vector (double4, float4, long4, …), which CPUs run with SIMD instructions; the lanes
// are split into the private arrays afterwards.
#define GML_CAT2(a, b) a##b
#define GML_CAT(a, b) GML_CAT2(a, b)
typedef GML_CAT(GML_ACC, GML_LOAD) accl_t;
#define GML_CONVERT_L GML_CAT(convert_, GML_CAT(GML_ACC, GML_LOAD))
#define GML_VSTORE_ACC GML_CAT(vstore, GML_LOAD)
#if GML_ACC_INT
#define GML_ISNAN_L(x) ((x) != (x))
#define GML_ABS_L(x) select((x), -(x), (x) < (accl_t)0)
#else
#define GML_ISNAN_L(x) isnan(x)
#define GML_ABS_L(x) fabs(x)
#endif

static inline accl_t gml_transform_l(const GML_TL v)
{
#if defined(GML_OP_L0)
    return GML_CONVERT_L(v != (GML_TL)0) & (accl_t)1; // -1 where not zero (NaN is not zero)
#else
    const accl_t x = GML_CONVERT_L(v);
#if defined(GML_OP_L1) || defined(GML_OP_LINF)
    return GML_ABS_L(x);
#elif defined(GML_OP_L2)
    return x * x;
#else
    return x;
#endif
#endif
}

static inline void gml_fold_l(accl_t *s, accl_t *c, const accl_t x)
{
#if defined(GML_OP_MIN)
    *s = select(*s, x, (x < *s) | GML_ISNAN_L(x));
#elif defined(GML_OP_MAX) || defined(GML_OP_LINF)
    *s = select(*s, x, (x > *s) | GML_ISNAN_L(x));
#elif GML_COMP
    const accl_t t = *s + x;
    *c += select((x - t) + *s, (*s - t) + x, fabs(*s) >= fabs(x));
    *s = t;
#else
    *s += x;
#endif
}
#endif

// Folds every work-item's GML_OUTS accumulators in local memory; work-item 0 ends with the
// group's result in scratch[0 .. GML_OUTS * GML_CS).
static void gml_group(const acc_t *s, const acc_t *c, __local acc_t *scratch)
{
    const uint lid = get_local_id(0);
    __local acc_t *mine = scratch + lid * (GML_OUTS * GML_CS);
    for (int o = 0; o < GML_OUTS; o++) {
        mine[o * GML_CS] = s[o];
#if GML_COMP
        mine[o * GML_CS + 1] = c[o];
#endif
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint h = get_local_size(0) / 2; h > 0; h >>= 1) {
        if (lid < h) {
            __local const acc_t *other = scratch + (lid + h) * (GML_OUTS * GML_CS);
            for (int o = 0; o < GML_OUTS; o++) {
                acc_t a = mine[o * GML_CS];
                acc_t ac = GML_COMP ? mine[o * GML_CS + GML_CS - 1] : 0;
                const acc_t b = other[o * GML_CS];
                const acc_t bc = GML_COMP ? other[o * GML_CS + GML_CS - 1] : 0;
                gml_merge(&a, &ac, b, bc);
                mine[o * GML_CS] = a;
#if GML_COMP
                mine[o * GML_CS + 1] = ac;
#endif
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

// The first pass of one work-group: its result ends in scratch[0 .. GML_OUTS * GML_CS).
static void gml_first(__global const GML_TL *restrict input, const ulong loads,
                      const ulong scalars, __local acc_t *scratch)
{
    acc_t s[GML_LANES], c[GML_LANES];
    for (int j = 0; j < GML_LANES; j++) {
        s[j] = GML_NEUTRAL;
        c[j] = 0;
    }
    elem_t v[GML_LOAD], w[GML_LOAD];
    const size_t stride = get_global_size(0);
#if GML_CHUNKED
    // On a CPU each work-item reads its own contiguous run: whole cache lines, in order.
    const size_t per = (loads + stride - 1) / stride;
    const size_t start = min(get_global_id(0) * per, (size_t)loads);
    const size_t end = min(start + per, (size_t)loads);
#if GML_NORM
    for (size_t i = start; i < end; i++) {
        GML_UNPACK(input[i], v);
        gml_take(s, c, v);
    }
#else
    accl_t sl = (accl_t)GML_NEUTRAL, cl = (accl_t)0;
    for (size_t i = start; i < end; i++)
        gml_fold_l(&sl, &cl, gml_transform_l(input[i]));
    // Split into lanes (the grid-stride loop below has nothing left to add).
    GML_VSTORE_ACC(sl, 0, s);
    GML_VSTORE_ACC(cl, 0, c);
#endif
    size_t k = loads; // nothing left for the grid-stride loop
#else
    size_t k = get_global_id(0);
#endif
    // Two loads in flight per work-item, then the odd one.
    for (; k + stride < loads; k += 2 * stride) {
        const GML_TL a = input[k];
        const GML_TL b = input[k + stride];
        GML_UNPACK(a, v);
        GML_UNPACK(b, w);
        gml_take(s, c, v);
        gml_take(s, c, w);
    }
    if (k < loads) {
        GML_UNPACK(input[k], v);
        gml_take(s, c, v);
    }
#if !GML_NORM
    // The tail: whole vectors, fewer scalars than a load; lane j is still component j % W.
    // Lanes are indexed by the unrolled j only: an index computed at run time would put the
    // accumulators in stack memory for the whole kernel (on the H100 that cost the f32 sums
    // a tenth of their bandwidth).
    if (get_global_id(0) == 0) {
        __global const elem_t *flat = (__global const elem_t *)input;
        const ulong first = loads * GML_LOAD;
        for (int j = 0; j < GML_LOAD; j++)
            if (first + j < scalars)
                gml_fold(&s[j], &c[j], gml_transform(flat[first + j]));
    }
    // Lanes j and j + W hold the same component.
    for (int j = GML_W; j < GML_LOAD; j++)
        gml_merge(&s[j % GML_W], &c[j % GML_W], s[j], c[j]);
#endif
    gml_group(s, c, scratch);
}

// Work-item 0 writes the group's result as its partial.
static inline void gml_write_partial(__global acc_t *partials, __local const acc_t *scratch)
{
    if (get_local_id(0) == 0)
        for (int i = 0; i < GML_OUTS * GML_CS; i++)
            partials[get_group_id(0) * (GML_OUTS * GML_CS) + i] = scratch[i];
}

__kernel void gml_reduce_first(__global const GML_TL *restrict input,
                               __global acc_t *restrict partials,
                               const ulong loads,
                               const ulong scalars,
                               __local acc_t *scratch)
{
    gml_first(input, loads, scalars, scratch);
    gml_write_partial(partials, scratch);
}

// Folds the partials of `groups` work-groups in one work-group; work-item 0 gets the result.
// The reads are volatile: in the one-pass kernels other work-groups wrote them during this
// launch, and a cached line must not hide their writes.
static void gml_partials(volatile __global const acc_t *partials, const uint groups,
                         __local acc_t *scratch)
{
    acc_t s[GML_OUTS], c[GML_OUTS];
    for (int o = 0; o < GML_OUTS; o++) {
        s[o] = GML_NEUTRAL;
        c[o] = 0;
    }
    for (uint g = get_local_id(0); g < groups; g += get_local_size(0)) {
        volatile __global const acc_t *p = partials + g * (GML_OUTS * GML_CS);
        for (int o = 0; o < GML_OUTS; o++)
            gml_merge(&s[o], &c[o], p[o * GML_CS], GML_COMP ? p[o * GML_CS + GML_CS - 1] : 0);
    }
    gml_group(s, c, scratch);
}

// The result of output o, finished (compensation added back when finite, sqrt for L2).
static inline acc_t gml_finish(__local const acc_t *scratch, const int o)
{
    acc_t x = scratch[o * GML_CS];
#if GML_COMP
    if (isfinite(x))
        x += scratch[o * GML_CS + 1];
#endif
#if defined(GML_OP_L2)
    x = sqrt(x);
#endif
    return x;
}

__kernel void gml_reduce_host(__global const acc_t *restrict partials,
                              __global acc_t *restrict out,
                              const uint groups,
                              __local acc_t *scratch)
{
    gml_partials(partials, groups, scratch);
    if (get_local_id(0) == 0)
        for (int o = 0; o < GML_OUTS; o++) {
            out[2 * o] = scratch[o * GML_CS];
            out[2 * o + 1] = GML_COMP ? scratch[o * GML_CS + GML_CS - 1] : 0;
        }
}

__kernel void gml_reduce_float(__global const acc_t *restrict partials,
                               __global float *restrict out,
                               const uint groups,
                               __local acc_t *scratch,
                               const uint index)
{
    gml_partials(partials, groups, scratch);
    if (get_local_id(0) == 0)
        for (int o = 0; o < GML_OUTS; o++)
            out[index + o] = (float)gml_finish(scratch, o);
}

#ifdef GML_FP64
__kernel void gml_reduce_double(__global const acc_t *restrict partials,
                                __global double *restrict out,
                                const uint groups,
                                __local acc_t *scratch,
                                const uint index)
{
    gml_partials(partials, groups, scratch);
    if (get_local_id(0) == 0)
        for (int o = 0; o < GML_OUTS; o++)
            out[index + o] = (double)gml_finish(scratch, o);
}
#endif

// One pass: every work-group writes its partial and takes a ticket; the group that takes the
// last ticket folds all partials and finishes, and puts the counter back to zero for the next
// launch. The fence before the ticket makes a group's partial visible to every group that
// sees its ticket; the fence after it, on the last group, orders its reads after the tickets.
// Returns whether this work-group is the last (the same value in all its work-items).
static bool gml_last_group(__global acc_t *partials, __global uint *counter,
                           __local const acc_t *scratch, __local uint *last)
{
    if (get_local_id(0) == 0) {
        for (int i = 0; i < GML_OUTS * GML_CS; i++)
            partials[get_group_id(0) * (GML_OUTS * GML_CS) + i] = scratch[i];
        mem_fence(CLK_GLOBAL_MEM_FENCE);
        *last = atomic_inc(counter) == get_num_groups(0) - 1;
        mem_fence(CLK_GLOBAL_MEM_FENCE);
    }
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    return *last;
}

// The one-pass kernels' common part: the first pass, then, in the last work-group only, the
// fold of every partial (work-item 0 gets the result). Returns whether this group is the last.
static bool gml_once(__global const GML_TL *restrict input, __global acc_t *partials,
                     const ulong loads, const ulong scalars, __local acc_t *scratch,
                     __global uint *counter, __local uint *last)
{
    gml_first(input, loads, scalars, scratch);
    if (!gml_last_group(partials, counter, scratch, last))
        return false;
    gml_partials(partials, get_num_groups(0), scratch);
    return true;
}

__kernel void gml_reduce_once_host(__global const GML_TL *restrict input,
                                   __global acc_t *partials,
                                   const ulong loads,
                                   const ulong scalars,
                                   __local acc_t *scratch,
                                   __global uint *counter,
                                   __global acc_t *restrict out)
{
    __local uint last;
    if (gml_once(input, partials, loads, scalars, scratch, counter, &last) &&
        get_local_id(0) == 0) {
        for (int o = 0; o < GML_OUTS; o++) {
            out[2 * o] = scratch[o * GML_CS];
            out[2 * o + 1] = GML_COMP ? scratch[o * GML_CS + GML_CS - 1] : 0;
        }
        *counter = 0;
    }
}

__kernel void gml_reduce_once_float(__global const GML_TL *restrict input,
                                    __global acc_t *partials,
                                    const ulong loads,
                                    const ulong scalars,
                                    __local acc_t *scratch,
                                    __global uint *counter,
                                    __global float *restrict out,
                                    const uint index)
{
    __local uint last;
    if (gml_once(input, partials, loads, scalars, scratch, counter, &last) &&
        get_local_id(0) == 0) {
        for (int o = 0; o < GML_OUTS; o++)
            out[index + o] = (float)gml_finish(scratch, o);
        *counter = 0;
    }
}

#ifdef GML_FP64
__kernel void gml_reduce_once_double(__global const GML_TL *restrict input,
                                     __global acc_t *partials,
                                     const ulong loads,
                                     const ulong scalars,
                                     __local acc_t *scratch,
                                     __global uint *counter,
                                     __global double *restrict out,
                                     const uint index)
{
    __local uint last;
    if (gml_once(input, partials, loads, scalars, scratch, counter, &last) &&
        get_local_id(0) == 0) {
        for (int o = 0; o < GML_OUTS; o++)
            out[index + o] = (double)gml_finish(scratch, o);
        *counter = 0;
    }
}
#endif
