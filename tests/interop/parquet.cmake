# Interop tests of src/parquet (label interop): freshet's files read by DuckDB
# (@duckdb/node-api) and hyparquet (+ hyparquet-compressors), and DuckDB's
# files read by freshet. parquet_interop writes the files and the values it
# meant to write; parquet_interop.mjs compares. The npm packages come from
# tests/interop/package.json (scripts/setup.sh --test); without them, or
# without node, the tests skip with exit code 77. (No ';' in the sh -c text:
# CMake would split the argument there.)
add_executable(parquet_interop ${CMAKE_SOURCE_DIR}/tests/interop/parquet_interop.c)
target_link_libraries(parquet_interop PRIVATE fr_parquet)

set(FR_PQ_NODE sh -c
    "command -v node >/dev/null 2>&1 && exec node \"$@\" || (echo 'skip: node is not installed (scripts/setup.sh --test)' && exit 77)"
    sh ${CMAKE_SOURCE_DIR}/tests/interop/parquet_interop.mjs)
set(FR_PQ_OUT ${CMAKE_BINARY_DIR}/interop/parquet)

fr_add_script_test(NAME interop_parquet_shapes LABELS interop TIMEOUT 600
    COMMAND ${FR_PQ_NODE} shapes $<TARGET_FILE:parquet_interop> ${FR_PQ_OUT}/shapes)
fr_add_script_test(NAME interop_parquet_property LABELS interop TIMEOUT 600
    COMMAND ${FR_PQ_NODE} property $<TARGET_FILE:parquet_interop> ${FR_PQ_OUT}/property 1 300)
fr_add_script_test(NAME interop_parquet_duckdb_to_freshet LABELS interop TIMEOUT 600
    COMMAND ${FR_PQ_NODE} reverse $<TARGET_FILE:parquet_interop> ${FR_PQ_OUT}/reverse)
