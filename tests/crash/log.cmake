# src/log crash loops: simulated power cuts and SIGKILL over seeds. Fast
# enough (a few seconds under ASan) to run with the unit tests too.
fr_add_test(NAME crash_log SOURCES ${CMAKE_SOURCE_DIR}/tests/crash/test_log_crash.c
            LIBS fr_log LABELS "unit;crash" TIMEOUT 180)
