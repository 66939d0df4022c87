#!/usr/bin/env bash
# enrich_feed_flags.sh FEED_TOOL — the API fixture's command-line side:
# `feed --api-*` flags reach the server (a 503 at --api-error-rate 1, the
# maxlag error with Retry-After at --api-maxlag 1, 429 past --api-rate-limit),
# answers have the MediaWiki shape, /api/counters counts what was served, and
# bad flag values are refused. Loopback only; the feed is stopped by its PID.
set -u
tool=$1
command -v curl >/dev/null || { echo "SKIP: curl is not installed"; exit 77; }
dir=$(mktemp -d); pass=0; fail=0; pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
ok() { if "$@"; then pass=$((pass+1)); else echo "FAIL: $*"; fail=$((fail+1)); fi; }
start() {
    "$tool" --listen 127.0.0.1:0 --synthetic --count 10 "$@" >"$dir/out" 2>"$dir/err" &
    pid=$!
    for _ in $(seq 100); do grep -q '^listening' "$dir/out" && break; sleep 0.05; done
    base=$(sed -n 's#^listening \(http://[^/]*\)/.*#\1#p' "$dir/out")
}
stop() { kill "$pid"; wait "$pid"; pid=; }
q='action=query&prop=pageprops&ppprop=wikibase_item&format=json&formatversion=2'

start
code=$(curl -s -o "$dir/a" -w '%{http_code}' "$base/api/enwiki/w/api.php?$q&titles=talk:foo%7CA%3Cb%7Cmarie_curie")
ok [ "$code" = 200 ]
ok grep -q '"normalized":\[{"fromencoded":false,"from":"talk:foo","to":"Talk:Foo"}' "$dir/a"
ok grep -q '"title":"A<b","invalidreason":' "$dir/a"
ok grep -q '"title":"Marie curie","pageprops":{"wikibase_item":"Q' "$dir/a"
# the same title through the host name answers the same
curl -s "$base/api/en.wikipedia.org/w/api.php?$q&titles=talk:foo%7CA%3Cb%7Cmarie_curie" >"$dir/b"
ok cmp -s "$dir/a" "$dir/b"
# one topic across languages: the same title has the same item on every wiki
item() { curl -s "$base/api/$1/w/api.php?$q&titles=Marie%20Curie" | sed -n 's/.*"wikibase_item":"\(Q[0-9]*\)".*/\1/p'; }
en=$(item enwiki); pl=$(item pl.wikipedia.org); fr=$(item frwiki)
ok [ -n "$en" ]
ok [ "$en" = "$pl" ]
ok [ "$en" = "$fr" ]
ok [ "$(curl -s -o /dev/null -w '%{http_code}' "$base/api/nosuchwiki/w/api.php?$q")" = 404 ]
curl -s "$base/api/enwiki/w/api.php?action=query&prop=pageprops&format=json&titles=A" >"$dir/c"
ok grep -q '"code":"badvalue"' "$dir/c"
curl -s "$base/api/counters" >"$dir/n"
ok grep -q '"requests":6,"answered":5,"titles":9,' "$dir/n"   # the 404 is not an API request; badvalue is
ok grep -q '"bad_request":1' "$dir/n"
stop

start --api-error-rate 1
ok [ "$(curl -s -o /dev/null -w '%{http_code}' "$base/api/enwiki/w/api.php?$q&titles=A")" = 503 ]
stop
start --api-maxlag 1
curl -s -D "$dir/h" "$base/api/enwiki/w/api.php?$q&titles=A&maxlag=5" >"$dir/m"
ok grep -q '"code":"maxlag"' "$dir/m"
ok grep -qi '^retry-after: 1' "$dir/h"
ok grep -qi '^x-database-lag:' "$dir/h"
# without maxlag in the request the error is not given
curl -s "$base/api/enwiki/w/api.php?$q&titles=A" >"$dir/m2"
ok grep -q '"pages"' "$dir/m2"
stop
start --api-rate-limit 1 --api-latency-ms 10
c1=$(curl -s -o /dev/null -w '%{http_code}' "$base/api/enwiki/w/api.php?$q&titles=A")
c2=$(curl -s -D "$dir/h2" -o /dev/null -w '%{http_code}' "$base/api/enwiki/w/api.php?$q&titles=A")
ok [ "$c1" = 200 ]
ok [ "$c2" = 429 ]
ok grep -qi '^retry-after: 1' "$dir/h2"
stop
for bad in "--api-error-rate 2" "--api-error-rate 0.6 --api-429-rate 0.6" "--api-latency-ms -1" "--api-rate-limit x"; do
    # shellcheck disable=SC2086
    "$tool" --listen 127.0.0.1:0 --synthetic --count 10 $bad >/dev/null 2>&1
    ok [ $? = 2 ]
done
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
