# Interop test of src/iceberg (label interop): freshet's Iceberg tables read
# over loopback HTTP by icebird and their data files by DuckDB. The writer
# half is tests/unit/test_iceberg_interop.c, the reader half
# tests/interop/iceberg_interop.mjs. Without node or the npm packages
# (scripts/setup.sh --test) the test skips with exit code 77.
add_executable(test_iceberg_interop ${CMAKE_SOURCE_DIR}/tests/unit/test_iceberg_interop.c)
target_link_libraries(test_iceberg_interop PRIVATE fr_iceberg)
target_include_directories(test_iceberg_interop PRIVATE ${CMAKE_SOURCE_DIR}/tests)

fr_add_script_test(NAME interop_iceberg LABELS interop TIMEOUT 600
    COMMAND sh -c
    "command -v node >/dev/null 2>&1 && exec node \"$@\" || (echo 'skip: node is not installed (scripts/setup.sh --test)' && exit 77)"
    sh ${CMAKE_SOURCE_DIR}/tests/interop/iceberg_interop.mjs
    $<TARGET_FILE:test_iceberg_interop> ${CMAKE_BINARY_DIR}/interop/iceberg)
