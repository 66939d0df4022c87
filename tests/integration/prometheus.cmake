# Debian's Prometheus scraping a running freshet: promtool checks of deploy/,
# series queried through Prometheus's API, the shipped rules evaluated and a
# test alert firing. Skips when prometheus is not installed.
fr_add_script_test(NAME integration_prometheus LABELS integration TIMEOUT 240
    COMMAND bash ${CMAKE_SOURCE_DIR}/tests/integration/prometheus.sh)
