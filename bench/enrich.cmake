# bench_enrich: enrichment lookups/s and API calls per 1,000 events against
# the feed's API fixture, cache cold and warm (bench/enrich.sh runs it).
add_executable(bench_enrich ${CMAKE_SOURCE_DIR}/bench/bench_enrich.c)
target_link_libraries(bench_enrich PRIVATE fr_enrich fr_feed fr_core)
