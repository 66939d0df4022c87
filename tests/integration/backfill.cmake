# freshet backfill (ADR 0048): sequential and pipelined give the same tables,
# SIGKILLs then a run to the end give them too, no processor outlives a
# killed backfill, a re-run adds nothing; verify passes each time.
fr_add_script_test(NAME integration_backfill LABELS "integration;chaos" TIMEOUT 300
    COMMAND bash ${CMAKE_SOURCE_DIR}/tests/integration/backfill.sh 5)
