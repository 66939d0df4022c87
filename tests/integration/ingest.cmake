# feed → ingest with disconnects, stalls and 25 SIGKILLs of ingest: no gap.
fr_add_script_test(NAME integration_ingest_kill LABELS integration TIMEOUT 600
    COMMAND bash ${CMAKE_SOURCE_DIR}/tests/integration/ingest_kill.sh 7 25)
# ingest --since, retention gaps and the overlap rule against freshet feed (issue 32).
fr_add_script_test(NAME integration_ingest_since LABELS integration TIMEOUT 300
    COMMAND bash ${CMAKE_SOURCE_DIR}/tests/integration/ingest_since.sh)

# ingest --file: every form and kind of line against an oracle, real
# recorded files, changed files refused, 20 SIGKILLs: every line exactly once.
fr_add_script_test(NAME integration_ingest_file LABELS "integration;chaos" TIMEOUT 600
    COMMAND bash ${CMAKE_SOURCE_DIR}/tests/integration/ingest_file.sh 3 20)
