# src/kafka against librdkafka's mock cluster in its own process
# (tests/integration/kafka_mock.c, built only for tests, loopback only).
if(FR_KAFKA)
    add_executable(kafka_mock ${CMAKE_SOURCE_DIR}/tests/integration/kafka_mock.c)
    target_link_libraries(kafka_mock PRIVATE PkgConfig::RDKAFKA)
endif()
if(FR_KAFKA)
    # feed -> ingest (SIGKILLs, leader moves, Produce errors, a broker down)
    # -> Kafka exactly once after dedup on sse id -> process (SIGKILLs, Fetch
    # errors) -> freshet verify.
    fr_add_script_test(NAME integration_kafka_e2e LABELS integration TIMEOUT 300
        COMMAND bash ${CMAKE_SOURCE_DIR}/tests/integration/kafka_e2e.sh $<TARGET_FILE:kafka_mock>)
endif()
if(FR_KAFKA)
    # The scale-out mode: `freshet process --group` instances joining,
    # SIGKILLed and rebalanced over a 6-partition topic; verify passes and
    # every table equals a control lake built without a group or kills.
    fr_add_script_test(NAME integration_kafka_group LABELS "integration;chaos" TIMEOUT 400
        COMMAND bash ${CMAKE_SOURCE_DIR}/tests/integration/kafka_group.sh $<TARGET_FILE:kafka_mock>)
    # The same with enrichment (ADR 0046): shards look up against a faulty
    # API fixture; silver_topics and gold_top_topics equal the control's.
    fr_add_script_test(NAME integration_kafka_group_enrich LABELS "integration;chaos" TIMEOUT 500
        COMMAND bash ${CMAKE_SOURCE_DIR}/tests/integration/kafka_group.sh $<TARGET_FILE:kafka_mock>
                21 6000 enrich)
endif()
if(FR_KAFKA)
    # Zombies under pause: an instance and its children SIGSTOPped past the
    # session timeout while epochs flow; its shards are fenced on SIGCONT, it
    # rejoins; verify passes and every table equals a control lake.
    fr_add_script_test(NAME integration_kafka_zombie LABELS "integration;chaos" TIMEOUT 900
        COMMAND bash ${CMAKE_SOURCE_DIR}/tests/integration/kafka_zombie.sh $<TARGET_FILE:kafka_mock>)
endif()
if(FR_KAFKA)
    # The reference build's topology (issue 31): the mock cluster with 6
    # partitions, moto's S3 as the warehouse, freshet serve as the REST
    # catalog, three --group instances with enrichment, 20 SIGKILLs and a
    # SIGSTOPped instance; verify, the control row for row, live files bounded.
    fr_add_script_test(NAME integration_scaleout_reference LABELS "integration;chaos" TIMEOUT 2700
        COMMAND bash ${CMAKE_SOURCE_DIR}/tests/integration/scaleout_reference.sh
                $<TARGET_FILE:kafka_mock> $<TARGET_FILE:s3_tool>)
    # Ten processes racing for two vCPUs: alone, so that neither it nor the
    # other scale-out tests starve (the zombie test beside it once ran its
    # shards' commits out of retries).
    set_tests_properties(integration_scaleout_reference PROPERTIES RUN_SERIAL TRUE)
endif()
if(FR_KAFKA)
    # ingest --file on log.backend=kafka (mock cluster): a plain import
    # against the oracle, then SIGKILLs: every line exactly once.
    fr_add_script_test(NAME integration_ingest_file_kafka LABELS "integration;chaos" TIMEOUT 600
        COMMAND bash ${CMAKE_SOURCE_DIR}/tests/integration/ingest_file.sh kafka
                $<TARGET_FILE:kafka_mock> 5 8)
endif()
if(FR_KAFKA)
    # A shard with enrichment moved to machines without its checkpoint
    # directory (ADR 0064): checkpoint and enrichment state from the bucket
    # (moto), commits through serve's REST catalog; verify and the control.
    fr_add_script_test(NAME integration_enrich_moved LABELS "integration;chaos" TIMEOUT 900
        COMMAND bash ${CMAKE_SOURCE_DIR}/tests/integration/enrich_moved.sh
                $<TARGET_FILE:kafka_mock> $<TARGET_FILE:s3_tool>)
endif()
