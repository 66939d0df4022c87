# The S3 warehouse against moto's S3 server on 127.0.0.1 (skips with 77 when
# moto is not installed): objects, pagination, multipart, create-only puts,
# faults injected by tests/integration/s3_fault_proxy.py, a writer SIGKILLed
# mid-upload, an Iceberg table on S3 read back by hyparquet, and a wrong
# credential against moto's authenticating mode.
add_executable(s3_tool ${CMAKE_SOURCE_DIR}/tests/integration/s3_tool.c)
target_link_libraries(s3_tool PRIVATE fr_objstore fr_conf)
fr_add_script_test(NAME integration_objstore LABELS integration TIMEOUT 240
    COMMAND bash ${CMAKE_SOURCE_DIR}/tests/integration/objstore.sh $<TARGET_FILE:s3_tool>)
# `freshet process` with lake.warehouse = s3://... on moto behind the fault
# proxy: an outage fails the epoch before the checkpoint, a SIGKILL is
# recovered, and the bucket's tables equal a control lake on local disk.
fr_add_script_test(NAME integration_process_s3 LABELS integration TIMEOUT 600
    COMMAND bash ${CMAKE_SOURCE_DIR}/tests/integration/process_s3.sh $<TARGET_FILE:s3_tool>)
