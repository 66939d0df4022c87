# Unit tests for src/sse: the parser (spec rules, chunk splits, size cap,
# recorded frames) and the client against an in-test HTTP server on
# 127.0.0.1.
fr_add_test(NAME unit_sse_parser SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_sse_parser.c
            LIBS fr_sse fr_core LABELS unit TIMEOUT 120)
find_package(Threads REQUIRED)
fr_add_test(NAME unit_sse_client SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_sse_client.c
            LIBS fr_sse fr_core Threads::Threads LABELS unit TIMEOUT 120)
