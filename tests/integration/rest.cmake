# The Iceberg REST catalog (docs/REST.md).
#  - integration_rest_client: the client (src/iceberg/rest_client.c) against
#    freshet's own REST server through a loopback fault proxy (500 after or
#    instead of applying a commit, a lost connection, 503 on reads).
#  - interop_rest: a lake built by feed -> ingest -> process --once, served
#    by `freshet serve`; iceberg-js (npm) drives the catalog API, icebird and
#    DuckDB read the tables it serves; `freshet tables` and `freshet verify`
#    still pass afterwards. Skips (77) without node or the npm packages.
fr_add_test(NAME integration_rest_client
            SOURCES ${CMAKE_SOURCE_DIR}/tests/integration/test_rest_client.c
            LIBS fr_serve fr_iceberg LABELS integration TIMEOUT 120)
fr_add_script_test(NAME interop_rest
                   COMMAND bash ${CMAKE_SOURCE_DIR}/tests/integration/rest.sh
                   LABELS integration interop TIMEOUT 300)
#  - integration_process_rest: `freshet process` committing every epoch
#    through `freshet serve`'s REST catalog behind a fault proxy
#    (tests/integration/rest_fault_proxy.py: 500 after and instead of a
#    commit, a connection closed after one), then SIGKILLs; verify passes
#    and DuckDB finds the tables equal to an embedded control run's.
fr_add_script_test(NAME integration_process_rest
                   COMMAND bash ${CMAKE_SOURCE_DIR}/tests/integration/process_rest.sh
                   LABELS integration chaos TIMEOUT 300)
#  - integration_rest_evolve: a REST lake created before the label columns
#    (tests/integration/rest_old_tool.c makes the old tables and an old
#    file through serve's catalog) gets them from `freshet process` by
#    schema evolution through the catalog (ADR 0059), checked by field id
#    by DuckDB (tests/interop/rest_evolve_check.mjs).
add_executable(rest_old_tool ${CMAKE_SOURCE_DIR}/tests/integration/rest_old_tool.c)
target_link_libraries(rest_old_tool PRIVATE fr_pipeline fr_conf)
fr_add_script_test(NAME integration_rest_evolve
                   COMMAND bash ${CMAKE_SOURCE_DIR}/tests/integration/rest_evolve.sh
                           $<TARGET_FILE:rest_old_tool>
                   LABELS integration interop TIMEOUT 300)
