#!/usr/bin/env bash
# ingest_file.sh — `freshet ingest --file` end to end, against an oracle
# that reads the input files itself (ingest_file_check.py):
#   1. every form: plain, .gz, .zst, standard input (plain and gzip), on a
#      generated stream with canaries, malformed and oversize events, CRLF
#      line ends, empty and blank lines and a final line without '\n':
#      the log holds exactly the expected lines, in file order, and the
#      reported counts match;
#   2. real recorded files from shared/ (an NDJSON sample and a raw SSE
#      capture), skipped with a message when shared/ is absent;
#   3. a re-run adds nothing; a file changed since (appended to, or edited
#      in place at the same size) is refused with exit 1 and the log keeps
#      what it had;
#   4. KILLS SIGKILLs at random moments of an import of two files (plain and
#      .zst) into a 3-partition log, then a run to the end: every line is
#      in the log exactly once.
# With "kafka MOCK" as arguments, parts 1 (plain only) and 4 run on
# log.backend=kafka against librdkafka's mock cluster (kafka_lib.sh).
# Loopback only. Usage: ingest_file.sh [SEED] [KILLS] | ingest_file.sh kafka MOCK [SEED] [KILLS]
set -euo pipefail
BIN=${FR_BINARY:?FR_BINARY must point at the freshet binary}
here=$(cd "$(dirname "$0")" && pwd)
mode=embedded
if [ "${1:-}" = kafka ]; then
    mode=kafka; MOCK=${2:?usage: ingest_file.sh kafka MOCK [SEED] [KILLS]}; shift 2
    [ -x "$MOCK" ] || { echo "skip: $MOCK is not built"; exit 77; }
fi
SEED=${1:-3}
KILLS=${2:-20}
command -v python3 >/dev/null || { echo "skip: python3 missing"; exit 77; }
command -v zstd >/dev/null || { echo "skip: zstd missing"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/fr-ifile.XXXXXX")
ing_pid=""; mock_pid=""
cleanup() {
    [ -n "$ing_pid" ] && kill -9 "$ing_pid" 2>/dev/null || true
    [ -n "$mock_pid" ] && kill -TERM "$mock_pid" 2>/dev/null || true
    wait 2>/dev/null || true
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
cd "$work"
RANDOM=$SEED
check() { python3 "$here/ingest_file_check.py" "$@"; }
fail() { echo "FAIL: $*"; exit 1; }

backend=()
if [ "$mode" = kafka ]; then
    # shellcheck source=kafka_lib.sh
    . "$here/kafka_lib.sh"
    mock_start "$MOCK" --brokers 1 --partitions 3 --replication 1
    backend=(--set log.backend=kafka --set "kafka.brokers=$brokers" --set kafka.message_timeout_ms=20000)
fi
# Each case in its own Kafka topic (the mock keeps one cluster).
fr_argv() { # fr_argv DATA: the global options for DATA's log, into $argv
    argv=(--data "$1" "${backend[@]}")
    if [ "$mode" = kafka ]; then argv+=(--set "kafka.topic=t$(basename "$1")"); fi
}
fr() { # fr DATA ARGS...: freshet on DATA's log
    local argv; fr_argv "$1"; shift
    "$BIN" "${argv[@]}" "$@"
}
dump() { # dump DATA PARTITIONS -> DATA.p0.ndjson ...
    local p files=()
    for p in $(seq 0 $(($2 - 1))); do
        fr "$1" log dump --topic recentchange --partition "$p" >"$1.p$p.ndjson"
        files+=("$1.p$p.ndjson")
    done
    echo "${files[@]}"
}

# ---- the generated stream, with every kind of line ------------------------
"$BIN" feed --dump --synthetic --seed "$SEED" --count 2500 --start 2026-11-01T00:00:00Z \
    --canary-rate 0.01 --malformed-rate 0.02 --dup-rate 0.01 --malformed-kinds all >gen.ndjson
python3 - <<'PY'
lines = open("gen.ndjson", "rb").read().split(b"\n")[:-1]
out = []
for i, line in enumerate(lines):
    out.append(line + (b"\r\n" if i % 7 == 0 else b"\n"))
    if i % 11 == 0:
        out.append(b"\n")
    if i % 13 == 0:
        out.append(b"  \t\r\n")
data = b"".join(out).rstrip(b"\n")  # the last line without '\n'
open("mixed.ndjson", "wb").write(data)
PY
gzip -k mixed.ndjson
zstd -q -k mixed.ndjson
check expect mixed.ndjson >expect.txt
cat expect.txt
grep -q 'canaries=[1-9]' expect.txt && grep -q 'oversize=[1-9]' expect.txt && grep -q 'empty=[1-9]' expect.txt ||
    fail "the generated stream lacks canaries, oversize or empty lines"

counts_of() { # the reported counts from an import's last status line
    sed -n 's/.*end of input: \([0-9]*\) lines read, [0-9]* appended, [0-9]* already in the log, \([0-9]*\) canaries dropped, \([0-9]*\) oversize refused, \([0-9]*\) empty, \([0-9]*\) SSE framing.*/lines=\1 canaries=\2 oversize=\3 empty=\4 framing=\5/p' "$1"
}

# ---- 1. every form ----------------------------------------------------------
if [ "$mode" = kafka ]; then forms=(plain); else forms=(plain gz zst stdin stdin-gz); fi
for form in "${forms[@]}"; do
    data=$work/f-$form
    [ "$mode" = kafka ] && mock topic "tf-$form" 1 1
    case $form in
        plain) exp=mixed.ndjson; fr "$data" ingest --file mixed.ndjson 2>"$form.log" ;;
        gz) exp=mixed.ndjson.gz; fr "$data" ingest --file mixed.ndjson.gz 2>"$form.log" ;;
        zst) exp=mixed.ndjson.zst; fr "$data" ingest --file mixed.ndjson.zst 2>"$form.log" ;;
        stdin) exp=mixed.ndjson@-; fr "$data" ingest --file - <mixed.ndjson 2>"$form.log" ;;
        stdin-gz) exp=mixed.ndjson.gz@-; cat mixed.ndjson.gz | fr "$data" ingest --file - 2>"$form.log" ;;
    esac || fail "$form: ingest --file exited $?: $(tail -3 "$form.log")"
    check expect "$exp" >/dev/null
    got=$(counts_of "$form.log")
    want=$(sed 's/ records=.*//' expect.txt)
    [ "$got" = "$want" ] || fail "$form: reported \"$got\", the file holds \"$want\""
    # shellcheck disable=SC2046
    check check $(dump "$data" 1) --order || fail "$form: the log differs from the file"
    echo "ok: $form"
done

# ---- 2. real recorded files --------------------------------------------------
shared=${FR_SHARED_DIR:-$here/../../../shared}/data/wikimedia
if [ "$mode" = embedded ] && [ -f "$shared/gokulportfolio-sample_events.jsonl" ] &&
    [ -f "$shared/wikivis-example.events" ]; then
    data=$work/real
    fr "$data" ingest --file "$shared/gokulportfolio-sample_events.jsonl" \
        "$shared/wikivis-example.events" 2>real.log || fail "real files: $(tail -3 real.log)"
    check expect "$shared/gokulportfolio-sample_events.jsonl" "$shared/wikivis-example.events" | tee real.txt
    grep -q 'framing=[1-9]' real.txt || fail "the SSE capture has no framing lines?"
    # shellcheck disable=SC2046
    check check $(dump "$data" 1) --order || fail "real files: the log differs"
    echo "ok: real recorded files (1200-line NDJSON sample, raw SSE capture)"
else
    echo "note: shared/data/wikimedia absent or not embedded mode: real recorded files skipped"
fi

# ---- 3. re-run and changed files ---------------------------------------------
if [ "$mode" = embedded ]; then
    data=$work/f-plain
    before=$(wc -l <"$data.p0.ndjson")
    fr "$data" ingest --file mixed.ndjson 2>rerun.log || fail "re-run: $(tail -3 rerun.log)"
    grep -q 'end of input: .* 0 appended' rerun.log || fail "re-run appended: $(tail -1 rerun.log)"
    mkdir -p changed && cp mixed.ndjson changed/mixed.ndjson
    printf '\n{"appended":1}\n' >>changed/mixed.ndjson
    if fr "$data" ingest --file changed/mixed.ndjson 2>changed.log; then fail "an appended-to file was accepted"; fi
    grep -q 'changed since it was imported' changed.log || fail "no clear refusal: $(cat changed.log)"
    cp mixed.ndjson changed/mixed.ndjson
    printf 'X' | dd of=changed/mixed.ndjson bs=1 seek=100 conv=notrunc status=none
    if fr "$data" ingest --file changed/mixed.ndjson 2>changed2.log; then fail "an edited file was accepted"; fi
    grep -q 'changed since it was imported' changed2.log || fail "no clear refusal: $(cat changed2.log)"
    dump "$data" 1 >/dev/null
    [ "$(wc -l <"$data.p0.ndjson")" = "$before" ] || fail "the refused runs changed the log"
    echo "ok: re-run adds nothing; changed files refused: $(grep -o 'changed since.*bytes (head hash [0-9a-f]*)' changed.log | head -1)"
fi

# ---- 4. SIGKILLs at random moments -------------------------------------------
big=6000
[ "$mode" = kafka ] && big=1500 # a mock partition keeps at most 5 MiB
"$BIN" feed --dump --synthetic --seed $((SEED + 1)) --count "$big" --start 2026-11-02T00:00:00Z \
    --canary-rate 0.005 --malformed-rate 0.01 --malformed-kinds truncated,missing_wiki,type_invalid >big1.ndjson
"$BIN" feed --dump --synthetic --seed $((SEED + 2)) --count "$big" --start 2026-11-03T00:00:00Z \
    --canary-rate 0.005 >big2.ndjson
zstd -q --rm big2.ndjson
check expect big1.ndjson big2.ndjson.zst
data=$work/kill
# Small group commits (a flush every ~3 records, ingest.file_fsync_bytes' least):
# many flush boundaries for the kills to land between, and an import slow
# enough (seconds) that the kills land inside it.
kill_cmd=(--set log.partitions=3 --set ingest.file_fsync_bytes=4096
          ingest --file big1.ndjson big2.ndjson.zst)
if [ "$mode" = kafka ]; then
    # Kafka's group commit is by time only: flush at every record, each
    # Produce answered 2 ms late by the mock, for the same effect.
    mock topic tkill 3 1
    mock rtt 1 2
    kill_cmd=(--set log.partitions=3 --set ingest.file_fsync_interval_ms=0
              ingest --file big1.ndjson big2.ndjson.zst)
fi
total=$(python3 -c 'import json; print(len(json.load(open("expect.json"))["records"]))')
inside=0
log_end() { fr "$data" log list --json 2>/dev/null |
    python3 -c 'import json,sys; print(sum(p["end_offset"] for p in json.load(sys.stdin)))' 2>/dev/null || echo 0; }
# How far the import got: the log's bytes on disk (cheap enough to poll
# every few ms), or the Kafka log's end offsets.
grown() {
    if [ "$mode" = kafka ]; then log_end; else
        { find "$data" -path '*log*' -type f -printf '%s\n' 2>/dev/null || true; } |
            awk '{s += $1} END {print s + 0}'; fi
}
for i in $(seq "$KILLS"); do
    fr_argv "$data"
    before=$(grown)
    "$BIN" "${argv[@]}" "${kill_cmd[@]}" 2>>kill.log & # not through fr: $! must be freshet
    ing_pid=$!
    # a random moment after this run's first appends: a fixed sleep let a
    # fast import finish within the first few kills on a quiet machine
    for _ in $(seq 500); do
        [ "$(grown)" != "$before" ] && break
        kill -0 "$ing_pid" 2>/dev/null || break
        sleep 0.01
    done
    sleep "0.0$(printf '%02d' $((RANDOM % 60)))"
    kill -9 "$ing_pid" 2>/dev/null || true
    wait "$ing_pid" 2>/dev/null || true
    ing_pid=""
    end=$(log_end)
    [ "$end" -gt 0 ] && [ "$end" -lt "$total" ] && inside=$((inside + 1))
    echo "kill $i: $end of $total records in the log"
done
fr "$data" "${kill_cmd[@]}" 2>>kill.log || fail "the last run failed: $(tail -3 kill.log)"
[ "$inside" -ge $((KILLS / 2)) ] ||
    fail "only $inside of $KILLS kills landed inside the import: the test would prove little"
# shellcheck disable=SC2046
check check $(dump "$data" 3) --order || fail "after $KILLS SIGKILLs the log is not every line exactly once"
echo "ok: $KILLS SIGKILLs ($inside inside the import), every line exactly once ($mode log)"
echo "PASS"
