# bench_log: embedded log append bandwidth with group commit (fsync every
# 4 MiB or 10 ms). bench/log.sh runs it beside dd ... conv=fsync:
#   cmake --preset release && cmake --build build/release && bash bench/log.sh
add_executable(bench_log ${CMAKE_SOURCE_DIR}/bench/bench_log.c)
target_link_libraries(bench_log PRIVATE fr_log fr_core)
