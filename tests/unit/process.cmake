# Unit tests for src/process: the quality gate (every reason, recorded
# events, docs/QUALITY.md drift), the operators (watermark, dedup, windows,
# top pages, save/load formats) and model-based tests of fr_proc against a
# plain reimplementation, including random epoch cuts through save/load.
fr_add_test(NAME unit_process_gate SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_process_gate.c
            LIBS fr_process fr_core LABELS unit TIMEOUT 120)
fr_add_test(NAME unit_process_model SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_process_model.c
            LIBS fr_process fr_core LABELS unit TIMEOUT 120)
fr_add_test(NAME unit_process_state SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_process_state.c
            LIBS fr_process fr_core LABELS unit TIMEOUT 120)
fr_add_test(NAME unit_process_window SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_process_window.c
            LIBS fr_process fr_core LABELS unit TIMEOUT 120)
fr_add_test(NAME unit_process_topics SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_process_topics.c
            LIBS fr_process fr_core LABELS unit TIMEOUT 120)
