// Bitonic sort of key-value pairs, after the NVIDIA CUDA SDK sample that Vestre's thesis ported
// to OpenCL (§5.5.1-5.5.2): a local-memory sort of blocks (bitonic_sort_local), global merge
// passes for strides that cross blocks (bitonic_merge_global) and local-memory merges for the
// strides inside a block (bitonic_merge_local). The same local kernels on shifted or gathered
// blocks are the thesis's incremental partial sort (§5.5.3-5.5.4): bitonic_sort_local sorts
// blocks (the thesis's step, and the redistribution step when gathering), bitonic_merge_local
// merges the two already sorted halves of each block after tidying them (the cheap step).
// permute_* apply a sort's order (original indices) to other arrays.
//
// Elements are sorted as packed 64-bit integers, (ordered key << 32) | value, always ascending:
//  - the key is mapped to a u32 whose unsigned order is the requested order: f32 bits go
//    through the IEEE 754 totalOrder map (-NaN < -inf < ... < -0.0 < +0.0 < ... < +inf < +NaN,
//    the order of Rust's f32::total_cmp), and a descending sort inverts all bits;
//  - equal keys are therefore ordered by value, so the output is fully determined (and stable
//    when the values are the original indices);
//  - padding is the all-ones sentinel, the largest packed value: it sorts to the end and a real
//    pair equal to it is bit-identical, so the first n outputs are always the n real pairs.
//
// Every compare-exchange is branch-free (min/max on ulong); where a work-item's direction is the
// same for all its pairs, the network is instantiated once per direction so that no pair pays
// for a select. Work-items own several elements in registers and apply up to LOCAL_BITS (local
// memory) or GLOBAL_BITS (global memory) stages of the network to them between two barriers or
// passes: the elements a work-item owns sit at base + r * lo, r < 2^bits, so the stages with
// strides lo .. lo << (bits - 1) pair only elements of the same work-item. Consecutive
// work-items own consecutive bases, so global accesses are coalesced; local memory is padded by
// one slot every 16 so that work-items whose bases are 16 apart do not hit the same bank.
//
// Compile-time parameters (set by src/sort/program.rs):
//   BLOCK_LEN    elements one work-group sorts in local memory, a power of two >= 64; the local
//                kernels run BLOCK_LEN / 16 work-items (GROUP_SIZE) of 16 elements each
//   GLOBAL_BITS  log2 of the elements one work-item of bitonic_merge_global owns, 1..6
//   PIECE_LEN    elements in one piece of the redistribution step (128 bytes of u32 keys)

#ifndef BLOCK_LEN
#error "BLOCK_LEN must be defined"
#endif
#ifndef GLOBAL_BITS
#error "GLOBAL_BITS must be defined"
#endif
#ifndef PIECE_LEN
#error "PIECE_LEN must be defined"
#endif

#define LOCAL_BITS 4
#define LOCAL_ELEMS (1u << LOCAL_BITS)
#define GROUP_SIZE (BLOCK_LEN / LOCAL_ELEMS)
#define GLOBAL_ELEMS (1u << GLOBAL_BITS)

// One spare slot every 16 elements: see the header.
#define PAD(i) ((i) + ((i) >> 4))
#define LOCAL_SLOTS (BLOCK_LEN + BLOCK_LEN / 16)

#define SENTINEL 0xFFFFFFFFFFFFFFFFUL

// `mode` bits: what the keys are and where values come from.
#define MODE_F32 1u  // keys are f32 bit patterns
#define MODE_DESC 2u // descending order
#define MODE_IOTA 4u // values are not read: each value is the element's position on entry

// `flags` bits of the local kernels: where a block lives and which way it is sorted.
#define FLAG_SRC_PACKED 1u // read packed pairs (else keys and values)
#define FLAG_DST_PACKED 2u // write packed pairs (else keys and values)
#define FLAG_ALTERNATE 4u  // odd blocks descending (full sort), else every block ascending
#define FLAG_GATHER 8u     // redistribution: block g gathers pieces g, g + blocks, g + 2 blocks, ...
#define FLAG_REVERSE 16u   // the second half of each block is read and written in reverse
#define FLAG_TIDY 32u      // sort 16-element groups in each half before merging (partial sort)

inline uint encode_key(uint bits, uint mode)
{
    if (mode & MODE_F32)
        bits = (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
    return (mode & MODE_DESC) ? ~bits : bits;
}

inline uint decode_key(uint bits, uint mode)
{
    if (mode & MODE_DESC)
        bits = ~bits;
    if (mode & MODE_F32)
        bits = (bits & 0x80000000u) ? (bits & 0x7FFFFFFFu) : ~bits;
    return bits;
}

// Compare-exchange of v[a] and v[b] (a < b in position): the smaller to a when `asc`.
#define CMPX(v, a, b, asc)                                                                     \
    do {                                                                                       \
        const ulong x_ = (v)[a], y_ = (v)[b];                                                  \
        const ulong lo_ = min(x_, y_), hi_ = max(x_, y_);                                      \
        (v)[a] = (asc) ? lo_ : hi_;                                                            \
        (v)[b] = (asc) ? hi_ : lo_;                                                            \
    } while (0)

// Where element `li` of block `g` lives in the array. FLAG_REVERSE reads and writes the second
// half of the block in reverse, so that two ascending halves form one bitonic sequence.
inline uint element_position(uint g, uint li, uint offset, uint blocks, uint flags)
{
    if (flags & FLAG_GATHER) {
        const uint piece = g + (li / PIECE_LEN) * blocks;
        return piece * PIECE_LEN + li % PIECE_LEN;
    }
    if ((flags & FLAG_REVERSE) && li >= BLOCK_LEN / 2)
        li = 3 * BLOCK_LEN / 2 - 1 - li;
    return offset + g * BLOCK_LEN + li;
}

// Loads the elements li = t + r * GROUP_SIZE of block `g` into registers (consecutive
// work-items read consecutive positions); positions past the data read as sentinels.
inline void load_elements(ulong *v, __global const uint *keys, __global const uint *values,
                          __global const ulong *packed, uint n, uint packed_len, uint offset,
                          uint blocks, uint mode, uint flags)
{
    const uint g = get_group_id(0);
    const uint t = get_local_id(0);
    const uint bound = (flags & FLAG_SRC_PACKED) ? packed_len : n;
#pragma unroll
    for (uint r = 0; r < LOCAL_ELEMS; ++r) {
        const uint p = element_position(g, t + r * GROUP_SIZE, offset, blocks, flags);
        ulong e = SENTINEL;
        if (p < bound) {
            if (flags & FLAG_SRC_PACKED) {
                e = packed[p];
            } else {
                const uint value = (mode & MODE_IOTA) ? p : values[p];
                e = ((ulong)encode_key(keys[p], mode) << 32) | value;
            }
        }
        v[r] = e;
    }
}

// Stores what load_elements loaded; positions past the data are not written.
inline void store_elements(const ulong *v, __global uint *keys, __global uint *values,
                           __global ulong *packed, uint n, uint packed_len, uint offset,
                           uint blocks, uint mode, uint flags)
{
    const uint g = get_group_id(0);
    const uint t = get_local_id(0);
    const uint bound = (flags & FLAG_DST_PACKED) ? packed_len : n;
#pragma unroll
    for (uint r = 0; r < LOCAL_ELEMS; ++r) {
        const uint p = element_position(g, t + r * GROUP_SIZE, offset, blocks, flags);
        if (p < bound) {
            if (flags & FLAG_DST_PACKED) {
                packed[p] = v[r];
            } else {
                keys[p] = decode_key((uint)(v[r] >> 32), mode);
                values[p] = (uint)v[r];
            }
        }
    }
}

// Moves the elements li = t + r * GROUP_SIZE between registers and local memory.
inline void regs_to_local(__local ulong *s, const ulong *v, uint t)
{
#pragma unroll
    for (uint r = 0; r < LOCAL_ELEMS; ++r)
        s[PAD(t + r * GROUP_SIZE)] = v[r];
}

inline void local_to_regs(ulong *v, __local const ulong *s, uint t)
{
#pragma unroll
    for (uint r = 0; r < LOCAL_ELEMS; ++r)
        v[r] = s[PAD(t + r * GROUP_SIZE)];
}

// Stages j = jtop .. 0 of the network on 16 registers, stage j pairing slots r and r | 2^j.
inline void round_regs(ulong *v, uint jtop, bool asc)
{
#pragma unroll
    for (int j = LOCAL_BITS - 1; j >= 0; --j) {
        if ((uint)j <= jtop) {
#pragma unroll
            for (uint r = 0; r < LOCAL_ELEMS; ++r)
                if ((r & (1u << j)) == 0)
                    CMPX(v, r, r | (1u << j), asc);
        }
    }
}

// All stages of sizes 2..16 on the 16 consecutive elements work-item `t` owns, in registers.
// Sub-blocks alternate direction by their position bit, flipped for a descending block.
inline void local_sort16(__local ulong *s, uint t, bool block_desc)
{
    const uint base = t << LOCAL_BITS;
    ulong v[LOCAL_ELEMS];
#pragma unroll
    for (uint r = 0; r < LOCAL_ELEMS; ++r)
        v[r] = s[PAD(base + r)];
#pragma unroll
    for (uint k = 2; k <= LOCAL_ELEMS; k <<= 1) {
#pragma unroll
        for (uint stride = k >> 1; stride > 0; stride >>= 1) {
#pragma unroll
            for (uint r = 0; r < LOCAL_ELEMS; ++r) {
                if ((r & stride) == 0) {
                    const bool asc = (((base + r) & k) == 0) != block_desc;
                    CMPX(v, r, r + stride, asc);
                }
            }
        }
    }
#pragma unroll
    for (uint r = 0; r < LOCAL_ELEMS; ++r)
        s[PAD(base + r)] = v[r];
}

// A whole bitonic sorting network on 16 registers: ascending, or descending if `desc`.
inline void sort16_regs(ulong *v, bool desc)
{
#pragma unroll
    for (uint k = 2; k <= LOCAL_ELEMS; k <<= 1) {
#pragma unroll
        for (uint stride = k >> 1; stride > 0; stride >>= 1) {
#pragma unroll
            for (uint r = 0; r < LOCAL_ELEMS; ++r)
                if ((r & stride) == 0)
                    CMPX(v, r, r + stride, ((r & k) == 0) != desc);
        }
    }
}

// Sorts the groups of 16 consecutive elements first + 16 t that lie inside one half of the
// block: ascending in the first half, descending in the second (which FLAG_REVERSE holds in
// reverse). Run with first = 0 and then first = 8, this sorts any half in which no element is
// more than 8 places from where it belongs (each element's place is in one of its two windows).
inline void tidy_round(__local ulong *s, uint t, uint first)
{
    const uint start = first + (t << LOCAL_BITS);
    const uint middle = BLOCK_LEN / 2;
    if (start + LOCAL_ELEMS > BLOCK_LEN || (start < middle && start + LOCAL_ELEMS > middle))
        return;
    ulong v[LOCAL_ELEMS];
#pragma unroll
    for (uint r = 0; r < LOCAL_ELEMS; ++r)
        v[r] = s[PAD(start + r)];
    if (start >= middle)
        sort16_regs(v, true);
    else
        sort16_regs(v, false);
#pragma unroll
    for (uint r = 0; r < LOCAL_ELEMS; ++r)
        s[PAD(start + r)] = v[r];
}

// Stages with strides `stride`, stride / 2, ... of a merge of size `k` (stopping after 4 stages
// or at stride 1), through registers: work-item `t` owns the 16 elements base + r * lo. The
// direction comes from bit `k` of the position in the block (uniform over the 16 elements,
// since all strides are below k), flipped for a descending block; pass k = BLOCK_LEN for a
// merge whose direction is the block's alone.
inline void local_round(__local ulong *s, uint t, uint k, uint stride, bool block_desc)
{
    const uint jtop = stride >= 8 ? 3 : 31 - clz(stride);
    const uint lo = stride >> jtop;
    const uint base = (t & (lo - 1)) | ((t & ~(lo - 1)) << LOCAL_BITS);
    const bool asc = ((base & k) == 0) != block_desc;
    ulong v[LOCAL_ELEMS];
#pragma unroll
    for (uint r = 0; r < LOCAL_ELEMS; ++r)
        v[r] = s[PAD(base + r * lo)];
    // From size BLOCK_LEN on the direction is the block's, the same for the whole work-group:
    // two specialised copies, no select per pair. Below, it changes between neighbouring
    // work-items, and a branch would diverge.
    if (k < BLOCK_LEN)
        round_regs(v, jtop, asc);
    else if (asc)
        round_regs(v, jtop, true);
    else
        round_regs(v, jtop, false);
#pragma unroll
    for (uint r = 0; r < LOCAL_ELEMS; ++r)
        s[PAD(base + r * lo)] = v[r];
}

// Sorts blocks of BLOCK_LEN elements in local memory (NVIDIA's bitonicSortShared/Local).
//
// Full sort: blocks at offset 0, odd blocks descending (FLAG_ALTERNATE) so that block pairs are
// bitonic sequences for the merges. Partial sort: every block ascending, blocks starting at
// `offset` (0 or BLOCK_LEN / 2 in alternate frames), or gathered from pieces spread over the
// whole array (FLAG_GATHER, `blocks` = block count). Reads and writes either keys and values
// (n of them) or packed pairs (packed_len of them).
__kernel __attribute__((reqd_work_group_size(GROUP_SIZE, 1, 1))) void
bitonic_sort_local(__global uint *keys, __global uint *values, __global ulong *packed,
                   const uint n, const uint packed_len, const uint offset, const uint blocks,
                   const uint mode, const uint flags)
{
    __local ulong s[LOCAL_SLOTS];
    const uint t = get_local_id(0);
    const bool block_desc = (flags & FLAG_ALTERNATE) && (get_group_id(0) & 1);
    // Each register array lives between two barriers only: a CPU driver (PoCL) otherwise keeps
    // it in memory for every work-item across the barriers.
    {
        ulong v[LOCAL_ELEMS];
        load_elements(v, keys, values, packed, n, packed_len, offset, blocks, mode, flags);
        regs_to_local(s, v, t);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    local_sort16(s, t, block_desc);
    for (uint k = 2 * LOCAL_ELEMS; k <= BLOCK_LEN; k <<= 1) {
        for (uint stride = k >> 1; stride > 0; stride >>= LOCAL_BITS) {
            barrier(CLK_LOCAL_MEM_FENCE);
            local_round(s, t, k, stride, block_desc);
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    {
        ulong v[LOCAL_ELEMS];
        local_to_regs(v, s, t);
        store_elements(v, keys, values, packed, n, packed_len, offset, blocks, mode, flags);
    }
}

// The merge stages with strides BLOCK_LEN / 2 .. BLOCK_LEN / 16 on the elements a work-item
// loaded (t + r * GROUP_SIZE), ascending unless the block is descending.
inline void first_merge_round(ulong *v, bool block_desc)
{
    if (block_desc)
        round_regs(v, LOCAL_BITS - 1, false);
    else
        round_regs(v, LOCAL_BITS - 1, true);
}

// The stages with strides BLOCK_LEN / 2 .. 1 of a merge, in local memory (NVIDIA's
// bitonicMergeShared/Local): in the full sort, of size k > BLOCK_LEN, direction from bit k of
// the block's position; in the partial sort (k = 0, every block ascending, FLAG_REVERSE), the
// merge of the two sorted halves of each block, after tidying them (FLAG_TIDY) so that keys
// that drifted a few places since the last frame are back in order. The first four merge
// stages pair the elements each work-item loaded (t + r * GROUP_SIZE), so without tidying they
// run straight from the loaded registers.
__kernel __attribute__((reqd_work_group_size(GROUP_SIZE, 1, 1))) void
bitonic_merge_local(__global uint *keys, __global uint *values, __global ulong *packed,
                    const uint n, const uint packed_len, const uint offset, const uint k,
                    const uint mode, const uint flags)
{
    __local ulong s[LOCAL_SLOTS];
    const uint t = get_local_id(0);
    const bool block_desc = ((offset + get_group_id(0) * BLOCK_LEN) & k) != 0;
    const bool tidy = (flags & FLAG_TIDY) != 0;
    // Each register array lives between two barriers only (see bitonic_sort_local).
    {
        ulong v[LOCAL_ELEMS];
        load_elements(v, keys, values, packed, n, packed_len, offset, 0, mode, flags);
        if (!tidy)
            first_merge_round(v, block_desc);
        regs_to_local(s, v, t);
    }
    if (tidy) {
        barrier(CLK_LOCAL_MEM_FENCE);
        tidy_round(s, t, 0);
        barrier(CLK_LOCAL_MEM_FENCE);
        tidy_round(s, t, LOCAL_ELEMS / 2);
        barrier(CLK_LOCAL_MEM_FENCE);
        ulong v[LOCAL_ELEMS];
        local_to_regs(v, s, t);
        first_merge_round(v, block_desc);
        regs_to_local(s, v, t);
    }
    for (uint stride = BLOCK_LEN >> (LOCAL_BITS + 1); stride > 0; stride >>= LOCAL_BITS) {
        barrier(CLK_LOCAL_MEM_FENCE);
        local_round(s, t, BLOCK_LEN, stride, block_desc);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    {
        ulong v[LOCAL_ELEMS];
        local_to_regs(v, s, t);
        store_elements(v, keys, values, packed, n, packed_len, offset, 0, mode,
                       flags & ~FLAG_REVERSE);
    }
}

// The last `stages` of GLOBAL_BITS stages on the registers of bitonic_merge_global.
inline void global_round(ulong *v, uint stages, bool asc)
{
#pragma unroll
    for (int j = GLOBAL_BITS - 1; j >= 0; --j) {
        if ((uint)j + stages >= GLOBAL_BITS) {
#pragma unroll
            for (uint r = 0; r < GLOBAL_ELEMS; ++r)
                if ((r & (1u << j)) == 0)
                    CMPX(v, r, r | (1u << j), asc);
        }
    }
}

// Up to GLOBAL_BITS stages of a merge of size k, strides `stride`, stride / 2, ... (`stages` of
// them, all >= BLOCK_LEN), on packed pairs in global memory (NVIDIA's bitonicMergeGlobal, with
// several stages per pass: each work-item owns GLOBAL_ELEMS elements in registers). Global size:
// packed_len / GLOBAL_ELEMS work-items.
__kernel void bitonic_merge_global(__global ulong *data, const uint k, const uint stride,
                                   const uint stages)
{
    const uint t = get_global_id(0);
    const uint lo = stride >> (GLOBAL_BITS - 1);
    const uint base = (t & (lo - 1)) | ((t & ~(lo - 1)) << GLOBAL_BITS);
    const bool asc = (base & k) == 0;
    ulong v[GLOBAL_ELEMS];
#pragma unroll
    for (uint r = 0; r < GLOBAL_ELEMS; ++r)
        v[r] = data[base + r * lo];
    if (asc)
        global_round(v, stages, true);
    else
        global_round(v, stages, false);
#pragma unroll
    for (uint r = 0; r < GLOBAL_ELEMS; ++r)
        data[base + r * lo] = v[r];
}

// dst[i] = src[indices[i]] for i < n: applies a sort's order to a float4 array (positions,
// velocities). An index past src_len gives a NaN row instead of reading out of bounds.
__kernel void permute_float4(__global const float4 *restrict src,
                             __global const uint *restrict indices,
                             __global float4 *restrict dst, const uint n, const uint src_len)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    const uint j = indices[i];
    dst[i] = j < src_len ? src[j] : (float4)(NAN);
}

// dst[i] = src[indices[i]] for i < n on 32-bit values; an index past src_len gives 0xFFFFFFFF.
__kernel void permute_u32(__global const uint *restrict src, __global const uint *restrict indices,
                          __global uint *restrict dst, const uint n, const uint src_len)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    const uint j = indices[i];
    dst[i] = j < src_len ? src[j] : 0xFFFFFFFFu;
}

// dst[i] = src[indices[i]] for i < n on 64-bit values (the snow a parcel carries); an index
// past src_len gives all-ones bits.
__kernel void permute_u64(__global const ulong *restrict src, __global const uint *restrict indices,
                          __global ulong *restrict dst, const uint n, const uint src_len)
{
    const uint i = get_global_id(0);
    if (i >= n)
        return;
    const uint j = indices[i];
    dst[i] = j < src_len ? src[j] : 0xFFFFFFFFFFFFFFFFul;
}
