# freshet serve over a lake in an S3 bucket (moto on 127.0.0.1, behind the
# fault proxy): /lake/ passes ranged reads through (bytes compared with
# moto's, 206/416/404, path escapes refused, 502/503 counted), icebird and
# hyparquet read the tables through it; then the SQL explorer in Chromium.
# Both skip (77) without moto, node's readers or (browser) chromium.
fr_add_script_test(NAME integration_serve_s3 LABELS integration TIMEOUT 300
    COMMAND bash ${CMAKE_SOURCE_DIR}/tests/integration/serve_s3.sh $<TARGET_FILE:s3_tool> http)
fr_add_script_test(NAME browser_explorer_s3 LABELS browser TIMEOUT 300
    COMMAND bash ${CMAKE_SOURCE_DIR}/tests/integration/serve_s3.sh $<TARGET_FILE:s3_tool> browser)
