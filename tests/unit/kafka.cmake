# src/kafka against librdkafka's mock cluster in its own process
# (kafka_mock, tests/integration/kafka.cmake). Loopback only.
if(FR_KAFKA)
    fr_add_test(NAME unit_kafka SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_kafka.c
                LIBS fr_kafka LABELS unit TIMEOUT 120 ARGS $<TARGET_FILE:kafka_mock>)
    add_dependencies(unit_kafka kafka_mock)
endif()
