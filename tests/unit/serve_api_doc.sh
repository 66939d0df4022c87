#!/bin/sh
# serve_api_doc.sh API.md FRESHET — fail when the route table in docs/API.md
# (between its routes:begin and routes:end markers) differs from the one
# `freshet serve --routes-markdown` generates from the server's route table.
doc=$1; bin=$2
sed -n '/<!-- routes:begin/,/<!-- routes:end/p' "$doc" | sed '1d;$d' > "${TMPDIR:-/tmp}/api_routes.$$"
if "$bin" serve --routes-markdown | diff -u "${TMPDIR:-/tmp}/api_routes.$$" -; then
    rm -f "${TMPDIR:-/tmp}/api_routes.$$"
    echo "1 passed, 0 failed"
else
    rm -f "${TMPDIR:-/tmp}/api_routes.$$"
    echo "$doc: the route table drifted from src/serve/serve_int.h; paste the output of"
    echo "  freshet serve --routes-markdown  between the routes markers"
    echo "0 passed, 1 failed"
    exit 1
fi
