// main(): a grid-stride loop over the P_TOTAL iterations, calling process(i) once for each.
// GRID_UNROLL (a define): each turn of the loop takes GRID_UNROLL iterations a grid step apart, unrolled, so
// that their loads are in flight together (the launch has GRID_UNROLL times fewer invocations).
#if GRID_UNROLL
#define GRID_TURN (GRID_UNROLL * step)
#else
#define GRID_TURN step
#endif
void main() {
    OFF_T total = PW(P_TOTAL);
    OFF_T step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (OFF_T i = gl_GlobalInvocationID.x; i < total;) {
#if GRID_UNROLL
        [[unroll]] for (uint k = 0u; k < GRID_UNROLL; ++k)
            if (k * step < total - i)
                process(i + k * step);
#else
        process(i);
#endif
        if (total - i <= GRID_TURN) break;  // i + GRID_TURN would reach or pass total (or wrap)
        i += GRID_TURN;
    }
}
