#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
// mode="raise" on the device (dmlgpu/plans/index_check.py): finds the first index, in row-major order, of a packed
// index tensor in one block that lies outside [-dim, dim) (signed types) or [0, dim) (unsigned ones), so that
// no index is read back to the host. Index i checks against dims[i % C_K] (a gather's one dimension: C_K 1;
// an index tuple's components: C_K its size; a dimension of size 0 has no valid index).
// S and R are the device's check buffers (runtime Device.watch): S[0] accumulates (device memory), R holds the
// reports (host-visible memory: read without a transfer). Pass 0 (C_FETCH 0): every bad index i makes S[0] at
// least ~i (atomicMax; S[0] is 0 before, and count < 2^32 - 1, so S[0] != 0 exactly when some index is bad,
// and ~S[0] is the first); an invocation checks C_UNROLL consecutive indices per step, their loads first.
// Pass 1 (C_FETCH 1, one invocation, after a barrier): report slot C_SLOT, R[4 slot ...] = (S[C_AT], the first
// bad position, its value's low and high words); S[C_AT] = 0 again for the next check.
// A gather that checks its own indices (FLAG_RAISE: gather.comp) accumulates in the same way into word C_AT of its
// output's buffer, bound as S: pass 2 (C_FETCH 2, one invocation) makes that word 0 before the gather, and pass
// 1 reports it after; pass 0 does not run.
// A scatter in place guarded by the check (IndexCheck.guard): after pass 0, pass 3 (C_FETCH 3) copies the indices
// into R, each of them replaced by the largest value of its type (out of every dimension's range: IndexCheck.
// guardable) where S[C_AT] says that some index is bad; the scatter reads that copy with mode="drop", so it writes
// nothing unless every index is good; pass 1 reports after it.
// Pass 0 with C_SELF 1 reports itself (a call template's device check beside its launches: IndexCheck.around):
// each workgroup counts itself in S[1] after its atomicMax, and the last one reports slot C_SLOT into R as pass 1
// does, making S[0] and S[1] 0 again.
// Pass 4 (C_FETCH 4, one workgroup: at most index_check.ONE_GROUP indices) does a call template's check in one
// dispatch (IndexCheck.around): it finds the first bad index through shared memory, writes the report of slot
// C_SLOT itself into the buffer bound at binding 2 (the reports: S is not used), and where C_COPY is 1 writes the
// guard's copy into R as pass 3 does; C_COPY 0 binds the reports at binding 3 too and writes nothing there.
//   IDX64 0/1: 32- or 64-bit indices
#include "workgroup.glsl"
layout(std430, binding = 0) restrict readonly buffer Params { uint P[]; };
// The indices, 16 bytes to an element (a component load reads only its own 4 bytes: the tail needs no padding)
layout(std430, binding = 1) restrict readonly buffer Indices { uvec4 IDX4[]; };
layout(std430, binding = 2) restrict buffer Status { uint S[]; };
layout(std430, binding = 3) restrict writeonly buffer Reports { uint R[]; };

const uint C_COUNT = 0u;    // indices to check
const uint C_K = 1u;        // entries of C_DIMS, 1..8
const uint C_SIGNED = 2u;   // 1: the indices are of a signed type
const uint C_FETCH = 3u;    // the pass: 0 to 4
const uint C_SLOT = 4u;     // passes 1 and 4, and 0 with C_SELF: the report slot
const uint C_AT = 5u;       // passes 1 and 2: the word of S that accumulates (pass 0: 0)
const uint C_COPY = 6u;     // pass 4: 1 writes the guard's copy into R
const uint C_SELF = 7u;     // pass 0: 1 has its last workgroup report (no pass 1 after it)
const uint C_DIMS = 8u;     // [8] dimension sizes, pairs of 32-bit words (low, high)
const uint C_UNROLL = 8u;   // indices per invocation and step of pass 0 (index_check.UNROLL), loaded 16 bytes
                            // at a time (the step's first index is a multiple of 8: 16-byte aligned)
const uint PER_LOAD = IDX64 == 1 ? 2u : 4u;
const uint C_AHEAD = 4u;    // indices a lane of pass 4 loads before it checks them

uvec2 index_at(uint i, bool is_signed) {
#if IDX64
    uint lo = IDX4[i / 2u][2u * (i % 2u)], hi = IDX4[i / 2u][2u * (i % 2u) + 1u];
    return uvec2(lo, hi);
#else
    uint lo = IDX4[i / 4u][i % 4u];
    return uvec2(lo, (is_signed && (lo & 0x80000000u) != 0u) ? 0xFFFFFFFFu : 0u);
#endif
}

shared uint first_bad;       // pass 4: ~(the first bad index), or 0
shared bool last_group;      // pass 0 with C_SELF: this workgroup is the last to finish

bool below(uvec2 a, uvec2 b) {      // a < b as unsigned 64-bit values (x: low word)
    return a.y < b.y || (a.y == b.y && a.x < b.x);
}

bool bad(uvec2 v, uint i, bool is_signed) {
    uint c = P[C_K] == 1u ? 0u : i % P[C_K];
    uvec2 dim = uvec2(P[C_DIMS + 2u * c], P[C_DIMS + 2u * c + 1u]);
    if (is_signed && (v.y & 0x80000000u) != 0u) {       // v - 2^64 < 0: valid when v >= 2^64 - dim, dim > 0
        if (dim == uvec2(0u))
            return true;
        uvec2 neg = uvec2(~dim.x + 1u, ~dim.y + (dim.x == 0u ? 1u : 0u));
        return below(v, neg);
    }
    return !below(v, dim);
}

// A report's four words (IndexCheck._report) from the accumulated word ``first`` (~ the first bad position, or 0):
// it, the position, the bad index's low and high words
uvec4 report_of(uint first, bool is_signed) {
    uvec2 v = first != 0u ? index_at(~first, is_signed) : uvec2(0u);
    return uvec4(first, ~first, v);
}

// The largest value of the index type (all ones, but a signed type's sign bit) for index word w: the guard's
// stand-in for every index when one is bad
uint largest(uint w, bool is_signed) {
    return (IDX64 == 1 && (w & 1u) == 0u) || !is_signed ? 0xFFFFFFFFu : 0x7FFFFFFFu;
}

void main() {
    bool is_signed = P[C_SIGNED] != 0u;
    if (P[C_FETCH] == 4u) {
        uint total = P[C_COUNT], lane = gl_LocalInvocationID.x;
        if (lane == 0u)
            first_bad = 0u;
        barrier();
        for (uint i = lane; i < total; i += C_AHEAD * WORKGROUP_SIZE) {     // C_AHEAD loads, then their checks
            uvec2 v[C_AHEAD];
            [[unroll]] for (uint j = 0u; j < C_AHEAD; ++j) {
                uint k = i + j * WORKGROUP_SIZE;
                v[j] = k < total ? index_at(k, is_signed) : uvec2(0u);
            }
            bool found = false;
            for (uint j = 0u; j < C_AHEAD && i + j * WORKGROUP_SIZE < total; ++j) {
                if (bad(v[j], i + j * WORKGROUP_SIZE, is_signed)) {
                    atomicMax(first_bad, ~(i + j * WORKGROUP_SIZE));    // a lane's first bad index is its least
                    found = true;
                    break;
                }
            }
            if (found)
                break;
        }
        barrier();
        uint first = first_bad;
        if (lane == 0u) {
            uint r = 4u * P[C_SLOT];
            uvec4 words = report_of(first, is_signed);
            for (uint k = 0u; k < 4u; ++k)
                S[r + k] = words[k];
        }
        if (P[C_COPY] != 0u) {
            uint words = total * (IDX64 == 1 ? 2u : 1u);
            for (uint w = lane; w < words; w += WORKGROUP_SIZE)
                R[w] = first != 0u ? largest(w, is_signed) : IDX4[w >> 2u][w & 3u];
        }
        return;
    }
    if (P[C_FETCH] == 2u) {
        if (gl_GlobalInvocationID.x == 0u)
            S[P[C_AT]] = 0u;
        return;
    }
    if (P[C_FETCH] == 3u) {
        bool poisoned = S[P[C_AT]] != 0u;
        uint words = P[C_COUNT] * (IDX64 == 1 ? 2u : 1u);
        uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
        for (uint w = gl_GlobalInvocationID.x; w < words; w += step) {
            R[w] = poisoned ? largest(w, is_signed) : IDX4[w >> 2u][w & 3u];
        }
        return;
    }
    if (P[C_FETCH] != 0u) {
        if (gl_GlobalInvocationID.x == 0u) {
            uint at = P[C_AT], r = 4u * P[C_SLOT], first = S[at];
            uvec4 words = report_of(first, is_signed);
            for (uint k = 0u; k < 4u; ++k)
                R[r + k] = words[k];
            S[at] = 0u;
        }
        return;
    }
    uint total = P[C_COUNT];
    uint step = C_UNROLL * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = C_UNROLL * gl_GlobalInvocationID.x; i < total;) {
        uvec2 v[C_UNROLL];
        if (total - i >= C_UNROLL) {            // a whole step: C_UNROLL / PER_LOAD loads of 16 bytes
            uvec4 w[C_UNROLL / PER_LOAD];
            [[unroll]] for (uint l = 0u; l < C_UNROLL / PER_LOAD; ++l)
                w[l] = IDX4[i / PER_LOAD + l];
            [[unroll]] for (uint j = 0u; j < C_UNROLL; ++j) {
#if IDX64
                v[j] = (j & 1u) == 0u ? w[j / 2u].xy : w[j / 2u].zw;
#else
                uint lo = w[j / 4u][j % 4u];
                v[j] = uvec2(lo, (is_signed && (lo & 0x80000000u) != 0u) ? 0xFFFFFFFFu : 0u);
#endif
            }
        } else {
            [[unroll]] for (uint j = 0u; j < C_UNROLL; ++j)
                v[j] = i + j < total ? index_at(i + j, is_signed) : uvec2(0u);
        }
        bool found = false;
        for (uint j = 0u; j < C_UNROLL && i + j < total; ++j) {
            if (bad(v[j], i + j, is_signed)) {
                atomicMax(S[0], ~(i + j));  // an invocation's first bad index is its least: it checks no more
                found = true;
                break;
            }
        }
        if (found || total - i <= step)
            break;
        i += step;
    }
    if (P[C_SELF] != 0u) {
        memoryBarrierBuffer();              // this workgroup's atomicMax before its count
        barrier();
        if (gl_LocalInvocationID.x == 0u)
            last_group = atomicAdd(S[1], 1u) == gl_NumWorkGroups.x - 1u;
        barrier();
        if (last_group && gl_LocalInvocationID.x == 0u) {     // every other workgroup counted after its atomicMax
            uint first = atomicExchange(S[0], 0u), r = 4u * P[C_SLOT];
            atomicExchange(S[1], 0u);
            uvec4 words = report_of(first, is_signed);
            for (uint k = 0u; k < 4u; ++k)
                R[r + k] = words[k];
        }
    }
}
