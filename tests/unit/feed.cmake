# The feed's unit tests: generator, Kafka-timestamp seek and resume parsing,
# fault plan and edits, recorded files, wire format, truth file.
fr_add_test(NAME unit_feed SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_feed.c
            LIBS fr_feed LABELS unit TIMEOUT 120)
