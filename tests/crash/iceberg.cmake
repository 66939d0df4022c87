# Crash loops for src/iceberg (label crash): the writer killed at every
# effect of a two-table epoch commit, over seeds, plus real SIGKILLs.
fr_add_test(NAME crash_iceberg SOURCES ${CMAKE_SOURCE_DIR}/tests/crash/crash_iceberg.c
            LIBS fr_iceberg LABELS crash TIMEOUT 900 ARGS 4 20)
