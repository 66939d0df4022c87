fr_add_test(NAME unit_core SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_core.c
            LIBS fr_core LABELS unit)
fr_add_test(NAME unit_progress SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_progress.c
            LIBS fr_core LABELS unit)
fr_add_test(NAME unit_fmt SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_fmt.c
            LIBS fr_core LABELS unit)
