# What `up` and `demo` print and `freshet status` (issue 33, ADR 0055):
# terminal.sh runs `freshet demo` for a minute as a person would and counts
# its lines (and checks the URLs line answers); status.sh reads `freshet
# status` (and --watch in tmux) before, while and after a pipeline runs.
fr_add_script_test(NAME integration_terminal LABELS integration TIMEOUT 300
    COMMAND bash ${CMAKE_SOURCE_DIR}/tests/integration/terminal.sh)
fr_add_script_test(NAME integration_status LABELS integration TIMEOUT 180
    COMMAND bash ${CMAKE_SOURCE_DIR}/tests/integration/status.sh)
