# Browser test of web/ (label browser): the dashboard and the SQL explorer in
# Debian's headless chromium (playwright-core from tests/browser/package.json)
# against a real feed + ingest + process + serve on loopback, offline.
# Screenshots and logs: ${CMAKE_BINARY_DIR}/browser-artifacts. Without node,
# chromium, tests/browser/node_modules or web/vendor (scripts/setup.sh --test)
# the test skips with exit code 77. (No ';' in the sh -c text: CMake would
# split the argument there.)
fr_add_script_test(NAME browser_pages LABELS browser TIMEOUT 300
    COMMAND sh -c
    "command -v node >/dev/null 2>&1 && exec node \"$@\" || (echo 'skip: node is not installed (scripts/setup.sh --test)' && exit 77)"
    sh ${CMAKE_SOURCE_DIR}/tests/browser/pages.mjs --out ${CMAKE_BINARY_DIR}/browser-artifacts)
# The charts' history (issue 33, ADR 0054): a dashboard opened after two
# pipelines (one processor; a group of shards and a finalizer) have run a
# minute shows serve's past at once, then goes on live. Screenshots in
# ${CMAKE_BINARY_DIR}/browser-artifacts-history.
fr_add_script_test(NAME browser_history LABELS browser TIMEOUT 420
    COMMAND sh -c
    "command -v node >/dev/null 2>&1 && exec node \"$@\" || (echo 'skip: node is not installed (scripts/setup.sh --test)' && exit 77)"
    sh ${CMAKE_SOURCE_DIR}/tests/browser/history.mjs --out ${CMAKE_BINARY_DIR}/browser-artifacts-history)
