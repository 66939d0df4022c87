#!/bin/sh
# feed_docs.sh FEED_TOOL DOC — fail when a flag of `feed --help` or a
# malformed kind is missing from docs/FEED.md (the flag table in feed_cmd.c
# drives --help; the doc must keep up).
tool=$1; doc=$2
missing=0
for flag in $("$tool" --help | grep -o -- '^  --[a-z-]*' | tr -d ' '); do
    grep -q -- "\`$flag" "$doc" || { echo "$doc does not document $flag"; missing=1; }
done
for kind in $("$tool" --help | sed -n 's/^malformed kinds://p' | tr ',' ' '); do
    grep -q -- "$kind" "$doc" || { echo "$doc does not document malformed kind $kind"; missing=1; }
done
if [ $missing = 0 ]; then echo "1 passed, 0 failed"; else echo "0 passed, 1 failed"; exit 1; fi
