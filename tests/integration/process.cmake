# The processor's exactly-once proof: 24 SIGKILLs of process (and some of
# ingest) against a faulty feed; ground truth, a control run and DuckDB.
fr_add_script_test(NAME chaos_process LABELS "chaos;integration" TIMEOUT 900
    COMMAND bash ${CMAKE_SOURCE_DIR}/tests/integration/process_chaos.sh 5 24 20000)
# Restart paths, deterministically: checkpoint lost; checkpoint and WAL lost.
fr_add_script_test(NAME integration_process_replay LABELS integration TIMEOUT 300
    COMMAND bash ${CMAKE_SOURCE_DIR}/tests/integration/process_replay.sh)
# Shards and the finalizer over the embedded log: a quiet partition holds
# gold back until its shard's idle epochs raise its watermark; verify, a
# SIGKILLed finalizer against a clean one, shards against one process.
fr_add_script_test(NAME integration_process_shards LABELS integration TIMEOUT 300
    COMMAND bash ${CMAKE_SOURCE_DIR}/tests/integration/process_shards.sh)
