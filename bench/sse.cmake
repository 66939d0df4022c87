# bench_sse: SSE parser throughput on ~256 MB of Wikimedia-shaped frames,
# against a memchr('\n') scan of the same bytes. Run from the release build:
#   cmake --preset release && cmake --build build/release && build/release/bench_sse
add_executable(bench_sse ${CMAKE_SOURCE_DIR}/bench/bench_sse.c)
target_link_libraries(bench_sse PRIVATE fr_sse fr_core)
