fr_add_test(NAME unit_ingest SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_ingest.c
            LIBS fr_ingest LABELS unit)
fr_add_test(NAME unit_ingest_since SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_ingest_since.c
            LIBS fr_ingest LABELS unit)
fr_add_test(NAME unit_ingest_file SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_ingest_file.c
            LIBS fr_ingest LABELS unit)
