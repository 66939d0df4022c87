# kafka_lib.sh — sourced by the Kafka tests (and bench/scaleout.sh): start
# librdkafka's mock cluster (tests/integration/kafka_mock.c) in its own
# process, on loopback, in the current directory, and talk to it.
#   mock_start MOCK_BINARY [kafka_mock options...]
#       sets mock_pid and brokers ("127.0.0.1:PORT,..."); exits 1 if it
#       does not come up
#   mock COMMAND...   one command through its control FIFO; exits 1 unless
#       it answers ok

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
