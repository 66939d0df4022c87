# The damage table (docs/DAMAGE.md), issue 34: every kind of damage to the
# lake, the log, the checkpoint, the WAL and the catalog gives the
# documented exit code and names what is damaged, with no crash, hang or
# unbounded RSS, and the recoveries the table names work (damage.py);
# hostile S3 and REST peers likewise (damage_peers.py).
fr_add_script_test(NAME integration_damage LABELS integration TIMEOUT 600
    COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/integration/damage.py)
fr_add_script_test(NAME integration_damage_peers LABELS integration TIMEOUT 600
    COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/integration/damage_peers.py)
# A full disk (a small tmpfs, root only; skipped otherwise) at the
# processor's commit, compaction, rebuild and dlq replay: each stops with
# a clear error, leaves the lake whole, and resumes to a control's lake.
fr_add_script_test(NAME integration_disk_full LABELS integration TIMEOUT 900
    COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/integration/disk_full.py)
# The disk fills while the pipeline runs (root only; skipped otherwise):
# a filler takes the tmpfs under a long-running processor that consumes a
# live feed, during commits and during a maintenance round; each stop is
# exit 1 naming the path, the lake stays whole, and after the space is
# freed the processor resumes, drains the log and verify passes.
fr_add_script_test(NAME integration_disk_full_live LABELS "integration;chaos" TIMEOUT 900
    COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/integration/disk_full_live.py)
# Bounded memory under hostile peers: SSE sources (a line that never ends,
# a 100 MiB comment, a 100 MiB id, one byte a second) and HTTP clients of
# serve (slow headers, huge headers, many streams); peak RSS under the
# stated bounds, and each keeps working.
fr_add_script_test(NAME integration_hostile_memory LABELS integration TIMEOUT 600
    COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/integration/hostile_memory.py)
