# Unit tests for src/stats: the metric table's conventions, the stats file
# (liveness, carry-over, foreign files), seqlock consistency between a
# writer and a reader process, the Prometheus text and the JSON documents.
fr_add_test(NAME unit_stats SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_stats.c
            LIBS fr_stats fr_core LABELS unit TIMEOUT 120)
# docs/METRICS.md is generated from the metric table; fail when it drifts.
fr_add_script_test(NAME docs_metrics_in_sync LABELS unit
    COMMAND sh ${CMAKE_SOURCE_DIR}/tests/unit/docs_in_sync.sh ${CMAKE_SOURCE_DIR}/docs/METRICS.md
            $<TARGET_FILE:freshet> serve --metrics-markdown)
