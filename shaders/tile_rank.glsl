// Stable ranks of a tile's pairs by digit with subgroup ballots (steps 2 and 3 of radix_scatter_match.comp, whose
// comment describes them; scatter_bucket.comp's fold_ranked ranks its tiles so too). Item k of lane ``lane`` of
// subgroup s is the tile's pair segment + k * S + lane (segment = s * ITEMS * S; S the subgroup size), one of the
// tile's while below ``n``. Needs GL_KHR_shader_subgroup_ballot, radix.glsl and MIN_SUBGROUP (the smallest
// subgroup: the counters' memory is sized by it); the includer declares RANK_WORDS (the words of the sorted tile,
// kept in the counters' memory).
const uint MAX_SUBGROUPS = WORKGROUP_SIZE / MIN_SUBGROUP;
// The counters (16 bits each, two per word: subgroup s, digit d at (s * RADIX + d) / 2, the odd digit high;
// a count of a subgroup's pairs, or a place in the tile, is below TILE < 2^16), then the sorted tile, in the same
// words.
const uint COUNTER_WORDS = MAX_SUBGROUPS * RADIX / 2u;
shared uint s_mem[COUNTER_WORDS > RANK_WORDS ? COUNTER_WORDS : RANK_WORDS];
shared uint s_start[RADIX];                 // digit's first place in the tile sorted by digit

uint counter(uint s, uint d) { return (s_mem[(s * RADIX + d) >> 1u] >> ((d & 1u) * 16u)) & 0xFFFFu; }

void clear_counters() {
    for (uint w = gl_LocalInvocationID.x; w < COUNTER_WORDS; w += WORKGROUP_SIZE)
        s_mem[w] = 0u;
}

// Step 2 (after clear_counters and a barrier): ranks[k], item k's rank among the subgroup's earlier items of its
// digit d[k] (every lane takes part in the ballots; those past n match none), the subgroup's counters their counts.
void subgroup_ranks(uint d[ITEMS], uint segment, uint n, out uint ranks[ITEMS]) {
    uint s = gl_SubgroupID, S = gl_SubgroupSize, lane = gl_SubgroupInvocationID;
    for (uint k = 0u; k < ITEMS; ++k) {
        uvec4 match = subgroupBallot(segment + k * S + lane < n);
        for (uint b = 0u; b < RADIX_BITS; ++b) {
            uvec4 ones = subgroupBallot(((d[k] >> b) & 1u) != 0u);
            match &= ((d[k] >> b) & 1u) != 0u ? ones : ~ones;
        }
        ranks[k] = counter(s, d[k]) + subgroupBallotExclusiveBitCount(match);
        subgroupBarrier();                 // every lane has read the counter before it moves on
        if (segment + k * S + lane < n && subgroupBallotFindLSB(match) == lane)
            atomicAdd(s_mem[(s * RADIX + d[k]) >> 1u], subgroupBallotBitCount(match) << ((d[k] & 1u) * 16u));
        subgroupMemoryBarrierShared();
        subgroupBarrier();
    }
}

// (After step 2 and a barrier; every invocation calls it) the tile's count of digit t (the counters' sum) and its
// first place in the tile sorted by digit, also in s_start[t] (for the others after a barrier).
void tile_digit(out uint count, out uint start) {
    uint t = gl_LocalInvocationID.x, total;
    count = 0u;
    for (uint w = 0u; w < gl_NumSubgroups; ++w)
        count += counter(w, t);
    start = scan_inclusive(count, total) - count;
    s_start[t] = start;
}

// Step 3 (s_start set, after a barrier): the counters become places, digit d's pairs of subgroup s after those of
// earlier subgroups from s_start[d]. Invocation t < RADIX / 2 takes digits 2t and 2t + 1 (one word per subgroup).
// A pair's place in the tile sorted by digit is then its rank + counter(s, d) (after a barrier).
void counters_to_places() {
    uint t = gl_LocalInvocationID.x;
    if (t < RADIX / 2u) {
        uint lo = s_start[2u * t], hi = s_start[2u * t + 1u];
        for (uint w = 0u; w < gl_NumSubgroups; ++w) {
            uint word = s_mem[w * RADIX / 2u + t];
            s_mem[w * RADIX / 2u + t] = lo | (hi << 16u);
            lo += word & 0xFFFFu;
            hi += word >> 16u;
        }
    }
}

// Steps 2 and 3 where the tile's digit counts come from the counters (radix_scatter_match.comp's TILE_LOCAL,
// scatter_bucket.comp's fold_ranked; after clear_counters, the items' loads and a barrier): ranks[k], item k's
// place in the tile sorted by digit; count, start: digit t's count in the tile and its first place there.
void tile_places(uint d[ITEMS], uint segment, uint n, out uint ranks[ITEMS], out uint count, out uint start) {
    subgroup_ranks(d, segment, n, ranks);
    barrier();
    tile_digit(count, start);
    barrier();
    counters_to_places();
    barrier();
    for (uint k = 0u; k < ITEMS; ++k)
        ranks[k] += counter(gl_SubgroupID, d[k]);
    barrier();
}
