# bench_iceberg: commit latency as table history grows (merging and expiry
# on) and compaction of a table built from many small appends. Run from the
# release build: bash bench/iceberg.sh (or make bench).
add_executable(bench_iceberg ${CMAKE_SOURCE_DIR}/bench/bench_iceberg.c)
target_link_libraries(bench_iceberg PRIVATE fr_iceberg)
