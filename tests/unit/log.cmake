# src/log: the durable log. Unit tests run in a few seconds each under ASan.
fr_add_test(NAME unit_log SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_log.c
            LIBS fr_log LABELS unit TIMEOUT 120)
fr_add_test(NAME unit_log_cmd SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_log_cmd.c
            LIBS fr_log LABELS unit TIMEOUT 60)
fr_add_test(NAME unit_log_torn SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_log_torn.c
            LIBS fr_log LABELS unit TIMEOUT 120)
fr_add_test(NAME unit_log_follow SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_log_follow.c
            LIBS fr_log LABELS unit TIMEOUT 60)
