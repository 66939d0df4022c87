/*
 * test_log_cmd.c — `freshet log list` and `freshet log dump` (fr_cmd_log):
 * the exact NDJSON bytes for JSON, text and binary payloads, keys and
 * header values; every dumped line is valid JSON; --from/--count; list
 * as a table and as JSON; usage errors exit 2, runtime errors 1.
 */
#include "check.h"

#include "test_log_util.c"

#include "core/buf.h"
#include "core/diag.h"
#include "core/json.h"
#include "log/log_cmd.h"

/* Run fr_cmd_log with stdout captured into out (NUL-terminated, static). */
static int run_cmd(const char *data_dir, char *out, size_t cap, int argc, char **argv)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/stdout.capture", data_dir);
    fflush(stdout);
    int saved = dup(1);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    int status = fr_cmd_log(data_dir, argc, argv);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    ssize_t n = pread(fd, out, cap - 1, 0);
    out[n > 0 ? n : 0] = 0;
    close(fd);
    unlink(path);
    return status;
}

static char out[1 << 20];

#define JSON_PAYLOAD "{\"a\": [1, 2],\n \"b\":\"\xc3\xa9\"}"

static void test_dump_formats(void)
{
    const char *dir = check_tmpdir();
    struct fr_log *log = NULL;
    CHECK_EQ_INT(fr_log_open(dir, "rc", NULL, &log), FR_OK);
    struct fr_log_header h1[] = {{"sse_id", 6, "[{\"offset\":7}]", 14}};
    struct fr_log_rec json = {.timestamp = 1000,
                              .key = "enwiki\x1f"
                                     "Main",
                              .key_len = 11,
                              .headers = h1,
                              .header_count = 1,
                              .payload = JSON_PAYLOAD,
                              .payload_len = sizeof JSON_PAYLOAD - 1};
    struct fr_log_header h2[] = {{"bin", 3, "\xff\x00\x01", 3}, {"t", 1, "", 0}};
    struct fr_log_rec binary = {.timestamp = 2000,
                                .key = "\x80",
                                .key_len = 1,
                                .headers = h2,
                                .header_count = 2,
                                .payload = "\x00\xfe\xff\x41",
                                .payload_len = 4};
    struct fr_log_rec text = {.timestamp = 3000, .payload = "plain \"text\"\n", .payload_len = 13};
    struct fr_log_rec reserved = {
        .timestamp = 4000, .payload = "{\"base64\":\"AA==\"}", .payload_len = 17};
    struct fr_log_rec array = {.timestamp = 5000, .payload = "[1,2]", .payload_len = 5};
    struct fr_log_rec *recs[] = {&json, &binary, &text, &reserved, &array};
    for (int i = 0; i < 5; i++) {
        CHECK_EQ_INT(fr_log_append(log, 0, recs[i], NULL), FR_OK);
    }
    CHECK_EQ_INT(fr_log_flush(log), FR_OK);
    struct fr_log_rec last;
    CHECK_EQ_INT(fr_log_last(log, 0, &last), 1);
    int64_t at = last.append_time;
    fr_log_close(log);

    char *argv[] = {"log", "dump", "--topic", "rc", NULL};
    CHECK_EQ_INT(run_cmd(dir, out, sizeof out, 4, argv), 0);
    char want[4096];
    snprintf(
        want, sizeof want,
        "{\"topic\":\"rc\",\"partition\":0,\"offset\":0,\"timestamp\":1000,\"append_time\":%lld,"
        "\"key\":\"enwiki\\u001fMain\",\"headers\":{\"sse_id\":\"[{\\\"offset\\\":7}]\"},"
        "\"payload\":{\"a\": [1, 2],  \"b\":\"\xc3\xa9\"}}\n"
        "{\"topic\":\"rc\",\"partition\":0,\"offset\":1,\"timestamp\":2000,\"append_time\":%lld,"
        "\"key\":{\"base64\":\"gA==\"},\"headers\":{\"bin\":{\"base64\":\"/wAB\"},\"t\":\"\"},"
        "\"payload\":{\"base64\":\"AP7/QQ==\"}}\n"
        "{\"topic\":\"rc\",\"partition\":0,\"offset\":2,\"timestamp\":3000,\"append_time\":%lld,"
        "\"key\":null,\"headers\":{},\"payload\":\"plain \\\"text\\\"\\n\"}\n"
        "{\"topic\":\"rc\",\"partition\":0,\"offset\":3,\"timestamp\":4000,\"append_time\":%lld,"
        "\"key\":null,\"headers\":{},\"payload\":\"{\\\"base64\\\":\\\"AA==\\\"}\"}\n"
        "{\"topic\":\"rc\",\"partition\":0,\"offset\":4,\"timestamp\":5000,\"append_time\":%lld,"
        "\"key\":null,\"headers\":{},\"payload\":\"[1,2]\"}\n",
        (long long)at, (long long)at, (long long)at, (long long)at, (long long)at);
    /* Append times may differ by a millisecond between records; compare
     * with them normalised. */
    char norm[1 << 16];
    size_t k = 0;
    for (const char *p = out; *p && k + 32 < sizeof norm;) {
        const char *m = strstr(p, "\"append_time\":");
        if (!m) {
            k += (size_t)snprintf(norm + k, sizeof norm - k, "%s", p);
            break;
        }
        m += 14;
        memcpy(norm + k, p, (size_t)(m - p));
        k += (size_t)(m - p);
        k += (size_t)snprintf(norm + k, sizeof norm - k, "%lld", (long long)at);
        p = m + strspn(m, "0123456789");
    }
    norm[k] = 0;
    CHECK_EQ_STR(norm, want);
    /* Each line is one valid JSON value. */
    for (char *line = out, *nl; (nl = strchr(line, '\n')) != NULL; line = nl + 1) {
        CHECK_EQ_INT(fr_json_validate(line, nl), FR_OK);
    }

    char *from[] = {"log", "dump", "--topic=rc", "--from", "3", "--count", "1", NULL};
    CHECK_EQ_INT(run_cmd(dir, out, sizeof out, 7, from), 0);
    CHECK(strstr(out, "\"offset\":3,") != NULL);
    CHECK(strchr(out, '\n') == out + strlen(out) - 1);
    char *end[] = {"log", "dump", "--topic", "rc", "--from", "end", NULL};
    CHECK_EQ_INT(run_cmd(dir, out, sizeof out, 6, end), 0);
    CHECK_EQ_STR(out, "");
    fprintf(stderr, "(errors about offset 9 and topic nope are expected)\n");
    char *range[] = {"log", "dump", "--topic", "rc", "--from", "9", NULL};
    CHECK_EQ_INT(run_cmd(dir, out, sizeof out, 6, range), 1);
    char *missing[] = {"log", "dump", "--topic", "nope", NULL};
    CHECK_EQ_INT(run_cmd(dir, out, sizeof out, 4, missing), 1);
    tl_rm_rf(dir);
}

static void test_list_and_usage(void)
{
    const char *dir = check_tmpdir();
    struct fr_log *log = NULL;
    CHECK_EQ_INT(fr_log_open(dir, "recentchange", NULL, &log), FR_OK);
    struct fr_log_rec rec = {.payload = "{}", .payload_len = 2};
    for (int i = 0; i < 3; i++) {
        CHECK_EQ_INT(fr_log_append(log, 0, &rec, NULL), FR_OK);
    }
    CHECK_EQ_INT(fr_log_flush(log), FR_OK);

    char *list[] = {"log", "list", NULL};
    CHECK_EQ_INT(run_cmd(dir, out, sizeof out, 2, list), 0);
    CHECK(strncmp(out, "TOPIC", 5) == 0);
    CHECK(strstr(out, "recentchange") != NULL);
    char *json[] = {"log", "list", "--json", NULL};
    CHECK_EQ_INT(run_cmd(dir, out, sizeof out, 3, json), 0);
    CHECK_EQ_INT(fr_json_validate(out, out + strlen(out)), FR_OK);
    CHECK(strstr(out, "\"topic\":\"recentchange\",\"partition\":0,\"earliest_offset\":0,"
                      "\"end_offset\":3,\"segments\":1,") != NULL);

    /* --follow returns as soon as --count records arrived. */
    char *follow[] = {"log", "dump",    "--topic", "recentchange", "--from",
                      "1",   "--count", "2",       "--follow",     NULL};
    CHECK_EQ_INT(run_cmd(dir, out, sizeof out, 9, follow), 0);
    CHECK(strstr(out, "\"offset\":2,") != NULL);
    fr_log_close(log);

    char *help[] = {"log", "--help", NULL};
    CHECK_EQ_INT(run_cmd(dir, out, sizeof out, 2, help), 0);
    CHECK(strstr(out, "usage: freshet log list") != NULL);
    char *dhelp[] = {"log", "dump", "--help", NULL};
    CHECK_EQ_INT(run_cmd(dir, out, sizeof out, 3, dhelp), 0);
    CHECK(strstr(out, "--follow") != NULL);
    char *lhelp[] = {"log", "list", "--help", NULL};
    CHECK_EQ_INT(run_cmd(dir, out, sizeof out, 3, lhelp), 0);
    fprintf(stderr, "(usage messages are expected)\n");
    char *none[] = {"log", NULL};
    CHECK_EQ_INT(run_cmd(dir, out, sizeof out, 1, none), 2);
    char *bad[] = {"log", "frobnicate", NULL};
    CHECK_EQ_INT(run_cmd(dir, out, sizeof out, 2, bad), 2);
    char *notopic[] = {"log", "dump", NULL};
    CHECK_EQ_INT(run_cmd(dir, out, sizeof out, 2, notopic), 2);
    char *badnum[] = {"log", "dump", "--topic", "x", "--count", "many", NULL};
    CHECK_EQ_INT(run_cmd(dir, out, sizeof out, 6, badnum), 2);
    char *badflag[] = {"log", "list", "--yaml", NULL};
    CHECK_EQ_INT(run_cmd(dir, out, sizeof out, 3, badflag), 2);
    tl_rm_rf(dir);
}

int main(void)
{
    fr_diag_set_level(FR_DIAG_WARN);
    RUN(test_dump_formats);
    RUN(test_list_and_usage);
    return check_report();
}
