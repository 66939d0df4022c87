# Which command works where (docs/TOPOLOGIES.md, ADR 0044): tables, verify,
# dlq list | replay, rebuild, compact, log list | dump and serve on six
# topologies — embedded / Kafka log (librdkafka's mock cluster in its own
# process), local / S3 warehouse (moto), SQLite / REST catalog (freshet
# serve) — each works with its answer checked, or refuses at once (exit 2)
# naming the missing capability's setting. Skips (77) without moto, node's
# DuckDB or the mock.
if(FR_KAFKA)
    fr_add_script_test(NAME integration_topologies LABELS integration TIMEOUT 400
        COMMAND bash ${CMAKE_SOURCE_DIR}/tests/integration/topologies.sh $<TARGET_FILE:kafka_mock>)
endif()
