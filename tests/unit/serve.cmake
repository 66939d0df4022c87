# Unit tests for src/serve: the server in-process on 127.0.0.1:0 against a
# raw HTTP client (documents, stream and its cap, Range, path traversal,
# bearer authentication, request limits, slow and deaf clients).
fr_add_test(NAME unit_serve SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_serve.c
            LIBS fr_serve fr_stats fr_core LABELS unit TIMEOUT 120)
# docs/API.md's route table is generated from the route table; fail on drift.
fr_add_script_test(NAME docs_api_routes_in_sync LABELS unit
    COMMAND sh ${CMAKE_SOURCE_DIR}/tests/unit/serve_api_doc.sh ${CMAKE_SOURCE_DIR}/docs/API.md
            $<TARGET_FILE:freshet>)
# The charts' history ring (issue 33, ADR 0054) against a model.
fr_add_test(NAME unit_serve_history SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_serve_history.c
            LIBS fr_serve fr_stats fr_core LABELS unit TIMEOUT 60)
