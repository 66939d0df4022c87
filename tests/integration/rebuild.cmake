# `freshet rebuild` end to end (tests/integration/rebuild.sh, DuckDB oracle
# tests/interop/rebuild_check.mjs): the same policy reproduces the tables and
# the checkpoint; stopped or killed rebuilds leave the tables all old or all
# new; a larger lateness moves the late events into silver; the processor
# continues and equals a lake processed from scratch under the new policy.
fr_add_script_test(NAME integration_rebuild LABELS integration TIMEOUT 180
    COMMAND bash ${CMAKE_SOURCE_DIR}/tests/integration/rebuild.sh 3)
# a single-process rebuild never writes beside the scale-out pipelines
# (ADR 0045): paused while a shard commits, it is refused inside the
# compare-and-swap.
fr_add_script_test(NAME integration_group_maint LABELS integration TIMEOUT 240
    COMMAND bash ${CMAKE_SOURCE_DIR}/tests/integration/group_maint.sh)
# `freshet rebuild` on a consumer group's lake (ADR 0066): refused while the
# group may run; the same policy reproduces the group's tables (also after
# idle epochs); a new lateness equals a control group built with it, before
# and after the group continues from the rebuilt checkpoints; a rebuild
# stopped after its fences, and a stale checkpoint, make shards refuse.
fr_add_script_test(NAME integration_group_rebuild LABELS integration chaos TIMEOUT 420
    COMMAND bash ${CMAKE_SOURCE_DIR}/tests/integration/group_rebuild.sh 5 $<TARGET_FILE:s3_tool>)
