// Stable least-significant-digit radix sort of 32-bit keys with 32-bit values
// (src/sort/radix.rs drives it).
//
// A pass orders the pairs by one 4-bit digit of the key, keeping the order of equal digits,
// so passes from the lowest digit up leave the pairs sorted by key with equal keys in their
// order on entry. A pass is three steps over tiles of TILE pairs, one work-group a tile:
//
// 1. `radix_count`: each tile counts its digits into `table[digit * tiles + tile]`.
// 2. `radix_scan`: the exclusive prefix sum of the table, digit-major, which is where each
//    tile's run of each digit starts in the output. Past one chunk of the table, the chunks'
//    totals are scanned in turn (and `radix_add` adds them to the level below, but for the
//    table itself: the scatter adds its chunk's offset as it reads an entry).
// 3. `radix_scatter`: each tile ranks its pairs by digit in local memory, stably, and writes
//    each run to its place (runs of ~TILE / 16 consecutive addresses).
//
// A work-item owns ITEMS consecutive pairs of its tile (read with one vector load each), so
// that the tile's order is work-item order, then item order: the ranking scans the work-items'
// digit counts digit-major (`counts[digit][work-item]`), which gives every work-item where its
// first pair of each digit goes. ITEMS <= 15 lets a work-item hold its 16 counts in 4-bit
// fields of one ulong.
//
// Keys are mapped so that unsigned order is the wanted order: f32 bit patterns through the
// IEEE 754 totalOrder map (as kernels/bitonic.cl does), and a descending sort inverts all
// bits. Pairs past `n` in the last tile take the key of all ones: the last digit in every
// pass and, being last in the tile, after every real pair of that digit; they are not
// written.

#ifndef GROUP
#define GROUP 256
#endif
#define ITEMS 8
#define TILE (GROUP * ITEMS)
#define BINS 16
#define COUNTS (BINS * GROUP)
// Entries a work-item scans in `counts` and in a chunk of the table.
#define SCAN_ITEMS 16
#define CHUNK (GROUP * SCAN_ITEMS)
// One padding word every 16 keeps a work-item's 16 consecutive counts off its neighbours'
// banks.
#define PAD(i) ((i) + ((i) >> 4))

#define MODE_F32 1u  // keys are f32 bit patterns
#define MODE_DESC 2u // descending order
#define MODE_IOTA 4u // values are not read: each value is the pair's position on entry

inline uint encode_key(uint bits, uint mode)
{
    if (mode & MODE_F32)
        bits = (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
    return (mode & MODE_DESC) ? ~bits : bits;
}

inline uint digit_of(uint key, uint shift, uint mode)
{
    return (encode_key(key, mode) >> shift) & (BINS - 1);
}

// The work-item's ITEMS digits, from its consecutive pairs starting at `first`; past `n` the
// last digit. Returns the digits' counts, 4 bits each.
inline ulong load_digits(__global const uint* keys, uint n, uint first, uint shift, uint mode,
                         uint* key, uchar* digit)
{
    if (first + ITEMS <= n) {
        const uint8 k = vload8(0, keys + first);
        key[0] = k.s0; key[1] = k.s1; key[2] = k.s2; key[3] = k.s3;
        key[4] = k.s4; key[5] = k.s5; key[6] = k.s6; key[7] = k.s7;
    } else {
        for (uint j = 0; j < ITEMS; ++j)
            key[j] = first + j < n ? keys[first + j] : 0u;
    }
    ulong counts = 0;
    for (uint j = 0; j < ITEMS; ++j) {
        const uint d = first + j < n ? digit_of(key[j], shift, mode) : BINS - 1;
        digit[j] = (uchar)d;
        counts += 1ul << (4 * d);
    }
    return counts;
}

// Writes the work-item's 16 digit counts into its column of `counts` (digit-major).
inline void store_column(__local uint* counts, ulong packed, uint lid)
{
    for (uint d = 0; d < BINS; ++d)
        counts[PAD(d * GROUP + lid)] = (uint)((packed >> (4 * d)) & 15ul);
}

// Exclusive prefix sum of `x` over the work-group, through `scratch` (GROUP words).
inline uint group_exclusive_scan(uint x, __local uint* scratch, uint lid)
{
    scratch[lid] = x;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint offset = 1; offset < GROUP; offset <<= 1) {
        const uint y = lid >= offset ? scratch[lid - offset] : 0u;
        barrier(CLK_LOCAL_MEM_FENCE);
        scratch[lid] += y;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const uint inclusive = scratch[lid];
    barrier(CLK_LOCAL_MEM_FENCE);
    return inclusive - x;
}

// Step 1: `table[d * tiles + tile]` = how many of the tile's pairs have digit d.
__kernel __attribute__((reqd_work_group_size(GROUP, 1, 1)))
void radix_count(__global const uint* keys, const uint n, const uint shift, const uint mode,
                 __global uint* table, const uint tiles)
{
    __local uint counts[PAD(COUNTS)];
    __local uint sums[GROUP];
    const uint lid = get_local_id(0);
    const uint tile = get_group_id(0);
    uint key[ITEMS];
    uchar digit[ITEMS];
    const ulong packed = load_digits(keys, n, tile * TILE + lid * ITEMS, shift, mode, key, digit);
    store_column(counts, packed, lid);
    barrier(CLK_LOCAL_MEM_FENCE);
    uint sum = 0;
    for (uint i = 0; i < SCAN_ITEMS; ++i)
        sum += counts[PAD(lid * SCAN_ITEMS + i)];
    sums[lid] = sum;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < BINS) {
        // Digit lid's row is GROUP entries: GROUP / SCAN_ITEMS work-items' sums.
        const uint per_row = GROUP / SCAN_ITEMS;
        uint total = 0;
        for (uint i = 0; i < per_row; ++i)
            total += sums[lid * per_row + i];
        // The pairs past n were counted as the last digit.
        if (lid == BINS - 1 && (tile + 1) * TILE > n)
            total -= (tile + 1) * TILE - n;
        table[lid * tiles + tile] = total;
    }
}

// Step 2: exclusive prefix sum of each chunk of CHUNK entries of `data` in place; the chunk's
// total into `totals[chunk]`.
__kernel __attribute__((reqd_work_group_size(GROUP, 1, 1)))
void radix_scan(__global uint* data, const uint len, __global uint* totals)
{
    __local uint scratch[GROUP];
    const uint lid = get_local_id(0);
    const uint first = get_group_id(0) * CHUNK + lid * SCAN_ITEMS;
    uint v[SCAN_ITEMS];
    uint sum = 0;
    for (uint i = 0; i < SCAN_ITEMS; ++i) {
        v[i] = first + i < len ? data[first + i] : 0u;
        sum += v[i];
    }
    uint running = group_exclusive_scan(sum, scratch, lid);
    for (uint i = 0; i < SCAN_ITEMS; ++i) {
        if (first + i < len)
            data[first + i] = running;
        running += v[i];
    }
    if (lid == GROUP - 1)
        totals[get_group_id(0)] = running;
}

// Step 2, above one chunk: adds each chunk's offset (the scanned totals) to its entries.
__kernel __attribute__((reqd_work_group_size(GROUP, 1, 1)))
void radix_add(__global uint* data, const uint len, __global const uint* offsets)
{
    const uint offset = offsets[get_group_id(0)];
    const uint first = get_group_id(0) * CHUNK + get_local_id(0);
    for (uint i = 0; i < SCAN_ITEMS; ++i) {
        const uint p = first + i * GROUP;
        if (p < len)
            data[p] += offset;
    }
}

// Step 3: each tile's pairs ranked by digit, stably, and written where the scanned table puts
// the tile's run of that digit.
// `chunk_offsets` holds the scanned totals of the table's chunks where it has more than one
// (`chunked`), else it is not read.
__kernel __attribute__((reqd_work_group_size(GROUP, 1, 1)))
void radix_scatter(__global const uint* keys, __global const uint* values, const uint n,
                   const uint shift, const uint mode, __global const uint* table,
                   __global const uint* chunk_offsets, const uint chunked, const uint tiles,
                   __global uint* keys_out, __global uint* values_out)
{
    __local uint counts[PAD(COUNTS)];
    __local uint scratch[GROUP];
    __local uint sorted_keys[TILE];
    __local uint sorted_values[TILE];
    // Where the tile's run of each digit goes, less where it starts in the tile.
    __local uint base[BINS];
    const uint lid = get_local_id(0);
    const uint tile = get_group_id(0);
    const uint first = tile * TILE + lid * ITEMS;
    uint key[ITEMS];
    uchar digit[ITEMS];
    const ulong packed = load_digits(keys, n, first, shift, mode, key, digit);
    uint value[ITEMS];
    if (mode & MODE_IOTA) {
        for (uint j = 0; j < ITEMS; ++j)
            value[j] = first + j;
    } else if (first + ITEMS <= n) {
        const uint8 v = vload8(0, values + first);
        value[0] = v.s0; value[1] = v.s1; value[2] = v.s2; value[3] = v.s3;
        value[4] = v.s4; value[5] = v.s5; value[6] = v.s6; value[7] = v.s7;
    } else {
        for (uint j = 0; j < ITEMS; ++j)
            value[j] = first + j < n ? values[first + j] : 0u;
    }
    store_column(counts, packed, lid);
    barrier(CLK_LOCAL_MEM_FENCE);

    // Exclusive scan of the counts, digit-major: counts[d][w] becomes how many of the tile's
    // pairs come before work-item w's first pair of digit d.
    uint mine[SCAN_ITEMS];
    uint sum = 0;
    for (uint i = 0; i < SCAN_ITEMS; ++i) {
        mine[i] = counts[PAD(lid * SCAN_ITEMS + i)];
        sum += mine[i];
    }
    uint running = group_exclusive_scan(sum, scratch, lid);
    for (uint i = 0; i < SCAN_ITEMS; ++i) {
        counts[PAD(lid * SCAN_ITEMS + i)] = running;
        running += mine[i];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < BINS) {
        const uint entry = lid * tiles + tile;
        const uint offset = chunked ? chunk_offsets[entry / CHUNK] : 0u;
        base[lid] = table[entry] + offset - counts[PAD(lid * GROUP)];
    }

    ulong seen = 0;
    for (uint j = 0; j < ITEMS; ++j) {
        const uint d = digit[j];
        const uint p = counts[PAD(d * GROUP + lid)] + (uint)((seen >> (4 * d)) & 15ul);
        seen += 1ul << (4 * d);
        sorted_keys[p] = key[j];
        sorted_values[p] = value[j];
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    const uint valid = min((uint)TILE, n - tile * TILE);
    for (uint r = 0; r < ITEMS; ++r) {
        const uint i = r * GROUP + lid;
        if (i < valid) {
            const uint k = sorted_keys[i];
            const uint at = base[digit_of(k, shift, mode)] + i;
            keys_out[at] = k;
            values_out[at] = sorted_values[i];
        }
    }
}
