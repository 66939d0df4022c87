# Progress of long work (core/progress.h): process --once, verify, rebuild,
# compact on a real lake; the non-terminal lines, -q, and the terminal form in tmux.
fr_add_script_test(NAME integration_progress LABELS integration TIMEOUT 300
    COMMAND bash ${CMAKE_SOURCE_DIR}/tests/integration/progress.sh)
