# `freshet verify`: a healthy lake (feed with duplicates, late, malformed
# and out-of-order events, through ingest and process) passes every check,
# also while a live pipeline commits beside it; tampered copies of it
# (made by verify_tamper through the Iceberg and Parquet APIs) fail the
# right check; and a lake of 100k events is verified in K > 1 passes under
# an 8 MiB budget with a bounded peak RSS.
add_executable(verify_tamper ${CMAKE_SOURCE_DIR}/tests/integration/verify_tamper.c)
target_link_libraries(verify_tamper PRIVATE fr_pipeline)
fr_add_script_test(NAME integration_verify
                   COMMAND bash ${CMAKE_SOURCE_DIR}/tests/integration/verify.sh $<TARGET_FILE:verify_tamper>
                   LABELS integration TIMEOUT 180)
fr_add_script_test(NAME integration_verify_memory
                   COMMAND bash ${CMAKE_SOURCE_DIR}/tests/integration/verify_memory.sh $<TARGET_FILE:verify_tamper>
                   LABELS integration TIMEOUT 180)
fr_add_script_test(NAME integration_verify_replay
                   COMMAND bash ${CMAKE_SOURCE_DIR}/tests/integration/verify_replay.sh $<TARGET_FILE:verify_tamper>
                   LABELS integration TIMEOUT 180)
# gold_top_topics' labels: a wrong one fails gold_topics_recomputed naming
# window and item; a missing one is counted (issue 33).
fr_add_script_test(NAME integration_verify_labels
                   COMMAND bash ${CMAKE_SOURCE_DIR}/tests/integration/verify_labels.sh $<TARGET_FILE:verify_tamper>
                   LABELS integration TIMEOUT 180)
