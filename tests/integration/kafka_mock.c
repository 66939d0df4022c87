/*
 * kafka_mock.c — librdkafka's mock Kafka cluster in its own process, for
 * the Kafka backend's tests (built only with the tests; never installed).
 *
 *   kafka_mock [--brokers N] [--topic T] [--partitions P] [--replication R]
 *              [--fifo PATH]
 *
 * Starts rd_kafka_mock_cluster_new with N brokers (default 3), creates
 * topic T (default recentchange) with P partitions (default 3) and
 * replication R (default min(3, N)) — the mock cannot CreateTopics — checks
 * that every listener is on 127.0.0.1, prints the bootstrap servers as the
 * first line of stdout, then reads commands, one a line, from stdin (or
 * from the FIFO PATH, opened read-write so writers may come and go):
 *
 *   down B | up B                  broker B (1..N) stops / starts answering
 *   leader P B [TOPIC]             partition P's leader moves to broker B
 *                                  (TOPIC: default the one created at start)
 *   produce-errors N ERR [ERR...]  the next N Produce requests fail: the
 *                                  errors listed in turn (names as
 *                                  rd_kafka_err2name prints them without
 *                                  "RD_KAFKA_RESP_ERR_", or numbers)
 *   fetch-errors N ERR [ERR...]    the same for Fetch
 *   produce-delay B MS             the next Produce request to broker B is
 *                                  applied at once but answered MS later
 *   clear                          drop pushed errors
 *   topic NAME P R                 create another topic (P partitions, R replicas)
 *   rtt B MS                       add MS of latency to broker B
 *   quit
 *
 * Each command answers "ok" or "error: ..." on stdout. Exits 0 on EOF,
 * quit, SIGTERM or SIGINT. Note the mock's limits (librdkafka 2.0.2): each
 * partition keeps at most 5 MiB or 100,000 messages.
 *
 * Threads: the main thread reads commands; the mock cluster runs on
 * librdkafka's threads.
 */
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t mock_stop;

static void on_signal(int sig)
{
    (void)sig;
    mock_stop = 1;
}

/* "NOT_LEADER_FOR_PARTITION", "RD_KAFKA_RESP_ERR_..." or a number. */
static int parse_err(const char *s, rd_kafka_resp_err_t *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s && !*end) {
        *out = (rd_kafka_resp_err_t)v;
        return 0;
    }
    if (strncmp(s, "RD_KAFKA_RESP_ERR_", 18) == 0) {
        s += 18;
    }
    for (int e = -200; e < 200; e++) {
        const char *name = rd_kafka_err2name((rd_kafka_resp_err_t)e);
        if (name && strcmp(name, s) == 0) {
            *out = (rd_kafka_resp_err_t)e;
            return 0;
        }
    }
    return -1;
}

static int push_errors(rd_kafka_mock_cluster_t *mc, int16_t api, char *args)
{
    char *save = NULL;
    char *tok = strtok_r(args, " \t", &save);
    long n = tok ? strtol(tok, NULL, 10) : 0;
    if (n <= 0 || n > 10000) {
        return -1;
    }
    rd_kafka_resp_err_t list[64];
    size_t nlist = 0;
    while ((tok = strtok_r(NULL, " \t", &save)) && nlist < 64) {
        if (parse_err(tok, &list[nlist]) < 0) {
            return -1;
        }
        nlist++;
    }
    if (nlist == 0) {
        return -1;
    }
    rd_kafka_resp_err_t *errs = malloc((size_t)n * sizeof *errs);
    if (!errs) {
        return -1;
    }
    for (long i = 0; i < n; i++) {
        errs[i] = list[(size_t)i % nlist];
    }
    rd_kafka_mock_push_request_errors_array(mc, api, (size_t)n, errs);
    free(errs);
    return 0;
}

static int run_command(rd_kafka_mock_cluster_t *mc, const char *topic, int nbrokers, char *line)
{
    char cmd[32];
    int a = 0, b = 0, used = 0;
    if (sscanf(line, "%31s%n", cmd, &used) != 1) {
        return 0;
    }
    char *rest = line + used;
    rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
    if (strcmp(cmd, "down") == 0 || strcmp(cmd, "up") == 0) {
        if (sscanf(rest, "%d", &a) != 1 || a < 1 || a > nbrokers) {
            return -1;
        }
        err = cmd[0] == 'd' ? rd_kafka_mock_broker_set_down(mc, a)
                            : rd_kafka_mock_broker_set_up(mc, a);
    } else if (strcmp(cmd, "leader") == 0) {
        char name[250] = "";
        if (sscanf(rest, "%d %d %249s", &a, &b, name) < 2 || b < 1 || b > nbrokers) {
            return -1;
        }
        err = rd_kafka_mock_partition_set_leader(mc, name[0] ? name : topic, a, b);
    } else if (strcmp(cmd, "rtt") == 0) {
        if (sscanf(rest, "%d %d", &a, &b) != 2 || a < 1 || a > nbrokers || b < 0) {
            return -1;
        }
        err = rd_kafka_mock_broker_set_rtt(mc, a, b);
    } else if (strcmp(cmd, "produce-delay") == 0) {
        if (sscanf(rest, "%d %d", &a, &b) != 2 || a < 1 || a > nbrokers || b < 0) {
            return -1;
        }
        err = rd_kafka_mock_broker_push_request_error_rtts(mc, a, 0 /* Produce */, 1,
                                                            RD_KAFKA_RESP_ERR_NO_ERROR, b);
    } else if (strcmp(cmd, "produce-errors") == 0) {
        return push_errors(mc, 0 /* Produce */, rest);
    } else if (strcmp(cmd, "fetch-errors") == 0) {
        return push_errors(mc, 1 /* Fetch */, rest);
    } else if (strcmp(cmd, "clear") == 0) {
        rd_kafka_mock_clear_request_errors(mc, 0);
        rd_kafka_mock_clear_request_errors(mc, 1);
    } else if (strcmp(cmd, "topic") == 0) {
        char name[250];
        if (sscanf(rest, "%249s %d %d", name, &a, &b) != 3 || a < 1 || b < 1 || b > nbrokers) {
            return -1;
        }
        err = rd_kafka_mock_topic_create(mc, name, a, b);
    } else if (strcmp(cmd, "quit") == 0) {
        mock_stop = 1;
    } else {
        return -1;
    }
    if (err) {
        fprintf(stderr, "kafka_mock: %s: %s\n", line, rd_kafka_err2name(err));
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    int nbrokers = 3, partitions = 3, replication = -1;
    const char *topic = "recentchange", *fifo = NULL;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) {
            fprintf(stderr, "kafka_mock: %s needs a value\n", argv[i]);
            return 2;
        }
        if (strcmp(argv[i], "--brokers") == 0) {
            nbrokers = atoi(v);
        } else if (strcmp(argv[i], "--topic") == 0) {
            topic = v;
        } else if (strcmp(argv[i], "--partitions") == 0) {
            partitions = atoi(v);
        } else if (strcmp(argv[i], "--replication") == 0) {
            replication = atoi(v);
        } else if (strcmp(argv[i], "--fifo") == 0) {
            fifo = v;
        } else {
            fprintf(stderr, "kafka_mock: unknown option %s\n", argv[i]);
            return 2;
        }
        i++;
    }
    if (replication < 0) {
        replication = nbrokers < 3 ? nbrokers : 3;
    }
    if (nbrokers < 1 || partitions < 1 || replication < 1 || replication > nbrokers) {
        fprintf(stderr, "kafka_mock: bad broker, partition or replication count\n");
        return 2;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    char errstr[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof errstr);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    if (!rk) {
        fprintf(stderr, "kafka_mock: %s\n", errstr);
        return 1;
    }
    int status = 1;
    int fd = 0;
    FILE *in = NULL;
    rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(rk, nbrokers);
    if (!mc) {
        fprintf(stderr, "kafka_mock: cannot start the mock cluster\n");
        goto cleanup;
    }
    rd_kafka_resp_err_t err = rd_kafka_mock_topic_create(mc, topic, partitions, replication);
    if (err) {
        fprintf(stderr, "kafka_mock: topic %s: %s\n", topic, rd_kafka_err2str(err));
        goto cleanup;
    }
    /* Loopback only: every listener must be 127.0.0.1. */
    const char *boot = rd_kafka_mock_cluster_bootstraps(mc);
    char *copy = strdup(boot);
    int loopback = copy != NULL;
    char *save = NULL;
    for (char *t = copy ? strtok_r(copy, ",", &save) : NULL; t; t = strtok_r(NULL, ",", &save)) {
        if (strncmp(t, "127.0.0.1:", 10) != 0) {
            loopback = 0;
        }
    }
    free(copy);
    if (!loopback) {
        fprintf(stderr, "kafka_mock: a listener is not on 127.0.0.1: %s\n", boot);
        goto cleanup;
    }
    printf("%s\n", boot);
    fflush(stdout);

    if (fifo) {
        fd = open(fifo, O_RDWR);
        if (fd < 0) {
            fprintf(stderr, "kafka_mock: %s: %s\n", fifo, strerror(errno));
            goto cleanup;
        }
    }
    in = fdopen(fd, "r");
    if (!in) {
        goto cleanup;
    }
    setvbuf(in, NULL, _IONBF, 0); /* poll sees every line: nothing waits in stdio */
    char line[1024];
    while (!mock_stop) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int n = poll(&pfd, 1, 200);
        if (n <= 0) {
            continue;
        }
        if (!fgets(line, sizeof line, in)) {
            break; /* EOF */
        }
        line[strcspn(line, "\r\n")] = 0;
        int rc = run_command(mc, topic, nbrokers, line);
        printf(rc < 0 ? "error: %s\n" : "ok\n", line);
        fflush(stdout);
    }
    status = 0;

cleanup:
    if (in) {
        fclose(in);
    }
    if (mc) {
        rd_kafka_mock_cluster_destroy(mc);
    }
    rd_kafka_destroy(rk);
    return status;
}
