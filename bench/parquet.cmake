# Parquet benchmark: bench_parquet (C) writes and reads a realistic silver
# table; bench/parquet.sh runs it beside DuckDB writing the same rows.
add_executable(bench_parquet ${CMAKE_SOURCE_DIR}/bench/bench_parquet.c)
target_link_libraries(bench_parquet PRIVATE fr_parquet m)
