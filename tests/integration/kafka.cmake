# src/kafka against librdkafka's mock cluster in its own process
# (tests/integration/kafka_mock.c, built only for tests, loopback only).
if(FR_KAFKA)
    add_executable(kafka_mock ${CMAKE_SOURCE_DIR}/tests/integration/kafka_mock.c)
    target_link_libraries(kafka_mock PRIVATE PkgConfig::RDKAFKA)
endif()
