# freshet serve against a real feed + ingest + process on loopback: the
# documents, the stream, /lake/ ranges, and SIGKILLs of process and serve.
fr_add_script_test(NAME integration_serve LABELS integration TIMEOUT 180
    COMMAND bash ${CMAKE_SOURCE_DIR}/tests/integration/serve.sh)
