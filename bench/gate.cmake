# bench_gate: quality-gate and fr_proc throughput on real recorded events,
# against src/core/json.c's scanner on the same bytes. Run from the release
# build:
#   cmake --preset release && cmake --build build/release --target bench_gate
#   FR_SHARED_DIR=../shared build/release/bench_gate
add_executable(bench_gate ${CMAKE_SOURCE_DIR}/bench/bench_gate.c)
target_link_libraries(bench_gate PRIVATE fr_process fr_core)
