#!/bin/sh
# docs_in_sync.sh DOC COMMAND... — fail when COMMAND's output differs from the
# committed generated document DOC (docs that are generated from tables).
doc=$1; shift
if "$@" | diff -u "$doc" -; then
    echo "1 passed, 0 failed"
else
    echo "$doc drifted from its table: regenerate it with: $*  > $doc"
    echo "0 passed, 1 failed"
    exit 1
fi
