/*
 * log_cmd.h — `freshet log`: inspect the log from the command line (the
 * embedded log, or the Kafka topic when log.backend = kafka: fr_cmd_log_with).
 *
 *   freshet log list [--json]
 *   freshet log dump --topic T [--partition P] [--from OFFSET|earliest|end]
 *                    [--count N] [--follow]
 *
 * dump prints one record per line as a JSON object (NDJSON, like Kafka's
 * console consumer):
 *   {"topic":"recentchange","partition":0,"offset":41,"timestamp":1791207722235,
 *    "append_time":1791207722301,"key":"enwiki\u001fMain_Page",
 *    "headers":{"sse_id":"[...]"},"payload":{...the event...}}
 * Bytes fields (key, header values, payload) are written as a JSON string
 * when they are valid UTF-8, and as {"base64":"..."} (RFC 4648, padded)
 * otherwise. The payload is embedded as raw JSON when it is a JSON object
 * (its CR/LF whitespace becomes spaces, so each record stays on one line),
 * except an object whose only member is "base64", which is written as a
 * string so that {"base64":...} always means binary. An empty key is null.
 *
 * Runs in the calling thread; writes stdout, messages on stderr.
 */
#ifndef FR_LOG_CMD_H
#define FR_LOG_CMD_H

/* argv[0] is the command name ("log"), argv[1] the subcommand. Returns the
 * exit status: 0 success, 1 failure (message on stderr), 2 usage error. */
int fr_cmd_log(const char *data_dir, int argc, char **argv);
/* The same on the backend opts selects (NULL: the embedded log). */
struct fr_log_opts;
int fr_cmd_log_with(const char *data_dir, const struct fr_log_opts *opts, int argc, char **argv);

#endif
