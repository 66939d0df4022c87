# `freshet dlq list` and `freshet dlq replay` end to end (tests/integration/
# dlq.sh, DuckDB oracle tests/interop/dlq_check.mjs): list agrees with the
# table; replays under changed rules (process.max_event_bytes,
# process.max_future_s) land each dead letter exactly once through random
# SIGKILLs and a stop at every step of the protocol; the processor continues.
fr_add_script_test(NAME integration_dlq LABELS integration TIMEOUT 180
    COMMAND bash ${CMAKE_SOURCE_DIR}/tests/integration/dlq.sh 5)
# `freshet dlq replay` on a consumer group's lake (ADR 0067): refused while
# the group may run; each shard's dead letters land as its next epoch,
# exactly once, and the finalizer counts them; the group continues from the
# replay's checkpoints; a stale checkpoint makes a shard refuse.
fr_add_script_test(NAME integration_group_dlq LABELS integration TIMEOUT 300
    COMMAND bash ${CMAKE_SOURCE_DIR}/tests/integration/group_dlq.sh 7)
