# The scale-out mode is observable (ADR 0042): shards and the finalizer over
# a 3-partition embedded log, serve's group totals against the lake's truth,
# per-member series, Debian's Prometheus evaluating the shipped rules and
# the Grafana expressions in this mode (when installed), a SIGKILLed shard
# shown down, a cleanly stopped one shown closed; with the Kafka mock, two
# `process --group` instances labelled by their identities, one SIGKILLed.
fr_add_script_test(NAME integration_group_metrics LABELS integration TIMEOUT 400
    COMMAND bash ${CMAKE_SOURCE_DIR}/tests/integration/group_metrics.sh
            $<$<TARGET_EXISTS:kafka_mock>:$<TARGET_FILE:kafka_mock>>)
