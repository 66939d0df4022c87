# kafka_lib.sh — sourced by the Kafka tests (and bench/scaleout.sh): start
# librdkafka's mock cluster (tests/integration/kafka_mock.c) in its own
# process, on loopback, in the current directory, and talk to it.
#   mock_start MOCK_BINARY [kafka_mock options...]
#       sets mock_pid and brokers ("127.0.0.1:PORT,..."); exits 1 if it
#       does not come up
#   mock COMMAND...   one command through its control FIFO; exits 1 unless
#       it answers ok
#   log_total ARGS...  the log's total end offset over every partition
#       (`$BIN ARGS... log list --json`), -1 when it cannot be read
#   log_settle TRIES   wait for ingest to have written what the feed had:
#       calls the caller's log_end (the log's total end offset, -1 when it
#       cannot be read) every 0.5 s until it is above 0 and the same four
#       looks in a row, at most TRIES looks

mock_start() {
    local bin=$1; shift
    mkfifo ctl
    "$bin" "$@" --fifo ctl >mock.out 2>mock.log &
    mock_pid=$!
    for _ in $(seq 100); do [ -s mock.out ] && break; sleep 0.1; done
    brokers=$(head -1 mock.out)
    case "$brokers" in 127.0.0.1:*) ;; *) echo "mock did not start: $brokers"; cat mock.log; exit 1 ;; esac
}

mock() {
    local before; before=$(wc -l <mock.out)
    echo "$*" >ctl
    for _ in $(seq 50); do [ "$(wc -l <mock.out)" -gt "$before" ] && break; sleep 0.1; done
    local reply; reply=$(tail -1 mock.out)
    [ "$reply" = ok ] || { echo "mock: $* -> $reply"; exit 1; }
    echo "mock: $*"
}

log_total() {
    "$BIN" "$@" log list --json 2>>list.log |
        python3 -c 'import json,sys; print(sum(p["end_offset"] for p in json.load(sys.stdin)))' 2>/dev/null || echo -1
}

log_settle() {
    local prev=-1 still=0 end
    for _ in $(seq "$1"); do
        sleep 0.5
        end=$(log_end)
        if [ "$end" = "$prev" ] && [ "$end" -gt 0 ]; then still=$((still + 1)); else still=0; fi
        prev=$end
        [ "$still" -ge 4 ] && break
    done
}
