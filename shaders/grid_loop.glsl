// main(): a grid-stride loop over the P_TOTAL iterations, calling process(i) once for each.
void main() {
    OFF_T total = PW(P_TOTAL);
    OFF_T step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (OFF_T i = gl_GlobalInvocationID.x; i < total;) {
        process(i);
        if (total - i <= step) break;  // i + step would reach or pass total (or wrap)
        i += step;
    }
}
