# src/iceberg: tables, catalog, commits, maintenance. Unit tests run in well
# under a minute under ASan; crash loops are in tests/crash (label crash).
fr_add_test(NAME unit_iceberg SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_iceberg.c
            LIBS fr_iceberg LABELS unit TIMEOUT 120)
# The commit path's metadata copy and cache (the soak's commit time, 2026-12-02).
fr_add_test(NAME unit_iceberg_meta_cache
            SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_iceberg_meta_cache.c
            LIBS fr_iceberg LABELS unit TIMEOUT 120)
