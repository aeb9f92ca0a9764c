// Sums a gml kernel folds itself (KernelSpec::sums in src/gml/kernel.rs), so that a solver's
// dot products need no reduction launch of their own.
//
// Every work-item holds GML_SUMS terms (zero for work-items past the loop's end, or whose
// body returned early); the work-group folds them in local memory and writes one partial per
// sum; the group that takes the last ticket folds every group's partials, puts the ticket back
// to zero for the next launch and runs the kernel's `finish` block in its work-item 0. The
// ticket is the one-pass scheme of gml_reduce.cl (gml_last_group).
//
// A kernel through an uplink runs one launch per degree table, in order on one queue: every
// launch's groups write their partials from `base` on and take tickets from the same counter,
// which expects the groups of all launches (`groups`), so the last group of the last launch
// folds them all and the finish runs once per enqueue of the kernel.
//
// The host defines GML_SUM_T (double where the device has fp64, float otherwise) and GML_SUMS.

// Folds every work-item's `sum` into `scratch[k * size]` (any work-group size, not only powers
// of two).
static void gml_sums_group(const GML_SUM_T *sum, __local GML_SUM_T *scratch)
{
    const uint lid = get_local_id(0);
    const uint size = get_local_size(0);
    for (int k = 0; k < GML_SUMS; k++)
        scratch[k * size + lid] = sum[k];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint n = size; n > 1;) {
        const uint upper = (n + 1) / 2;
        if (lid < n - upper)
            for (int k = 0; k < GML_SUMS; k++)
                scratch[k * size + lid] += scratch[k * size + lid + upper];
        barrier(CLK_LOCAL_MEM_FENCE);
        n = upper;
    }
}

// Returns true in work-item 0 of the work-group that finishes last, with the totals in `sum`
// (`base`: this launch's first partial; `groups`: the work-groups of every launch);
// false everywhere else. Every group runs the second fold (the others fold zeros): with its
// barriers inside the branch on `*last`, uniform as it is, PoCL 3.1 ran the kernel's `finish`
// in every work-item of the last group (test gml_sums::a_finish_that_branches_runs_once).
static bool gml_sums_fold(GML_SUM_T *sum, __global GML_SUM_T *partials, __global uint *ticket,
                          __local GML_SUM_T *scratch, __local uint *last, const uint base,
                          const uint groups)
{
    const uint lid = get_local_id(0);
    const uint size = get_local_size(0);
    gml_sums_group(sum, scratch);
    if (lid == 0) {
        for (int k = 0; k < GML_SUMS; k++)
            partials[(base + get_group_id(0)) * GML_SUMS + k] = scratch[k * size];
        mem_fence(CLK_GLOBAL_MEM_FENCE);
        *last = atomic_inc(ticket) == groups - 1;
        mem_fence(CLK_GLOBAL_MEM_FENCE);
    }
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    const bool folds = *last != 0;
    GML_SUM_T mine[GML_SUMS];
    for (int k = 0; k < GML_SUMS; k++)
        mine[k] = 0;
    if (folds)
        for (uint g = lid; g < groups; g += size)
            for (int k = 0; k < GML_SUMS; k++)
                mine[k] += partials[g * GML_SUMS + k];
    gml_sums_group(mine, scratch);
    bool finishes = false;
    if (folds && lid == 0) {
        for (int k = 0; k < GML_SUMS; k++)
            sum[k] = scratch[k * size];
        *ticket = 0;
        finishes = true;
    }
    return finishes;
}
