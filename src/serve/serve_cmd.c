/*
 * serve_cmd.c — `freshet serve`: options, the web root's default, signals,
 * and the generators of docs/METRICS.md and docs/API.md's route table.
 * Runs on the main thread; the server's threads are in http.c/stream.c.
 */
#include "serve/serve.h"

#include "core/buf.h"
#include "core/clock.h"
#include "core/diag.h"
#include "core/err.h"
#include "stats/stats.h"

#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifndef FR_WEB_DIR
#error "FR_WEB_DIR (the source tree's web/) is set by src/serve/CMakeLists.txt"
#endif

static volatile sig_atomic_t serve_stop_flag;

static void serve_on_signal(int sig)
{
    (void)sig;
    serve_stop_flag = 1;
}

static void serve_usage(FILE *out)
{
    fprintf(out,
            "usage: freshet serve [--listen ADDR] [--web-root DIR]\n"
            "       freshet serve --metrics-markdown | --routes-markdown\n\n"
            "Serve /metrics (Prometheus), the JSON API, the live dashboard's event stream, the\n"
            "lake's files and the web pages (docs/API.md) at ADDR (default serve.listen,\n"
            "127.0.0.1:8787; port 0 picks a free one). Prints \"listening http://ADDR/\" once\n"
            "bound. Reads <data>/stats and the lake; never writes them. The job endpoints need\n"
            "FRESHET_SERVE_API_TOKEN. SIGTERM or SIGINT: close the streams and exit 0.\n"
            "  --metrics-markdown  print docs/METRICS.md (from the metric table)\n"
            "  --routes-markdown   print docs/API.md's route table (from the route table)\n");
}

static int serve_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* serve.web_root, else <prefix>/share/freshet/web beside an installed
 * binary, else the source tree's web/. */
static void serve_web_root(const struct fr_conf *conf, const char *self, char *out, size_t outlen)
{
    if (conf->serve_web_root && conf->serve_web_root[0]) {
        snprintf(out, outlen, "%s", conf->serve_web_root);
        return;
    }
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", self ? self : "");
    char *slash = strrchr(dir, '/');
    if (slash) {
        *slash = 0;
        char installed[PATH_MAX + 32];
        snprintf(installed, sizeof installed, "%s/../share/freshet/web", dir);
        if (serve_is_dir(installed) && strlen(installed) < outlen) {
            memcpy(out, installed, strlen(installed) + 1);
            return;
        }
    }
    snprintf(out, outlen, "%s", FR_WEB_DIR);
}

static int serve_print(int (*gen)(struct fr_buf *))
{
    struct fr_buf buf;
    fr_buf_init(&buf, 1u << 20);
    int rc = gen(&buf);
    if (rc == FR_OK) {
        fwrite(buf.data, 1, buf.len, stdout);
    }
    fr_buf_free(&buf);
    return rc == FR_OK ? 0 : 1;
}

int fr_cmd_serve(struct fr_conf *conf, const char *self, char **global_args, int nglobal, int argc,
                 char **argv)
{
    static const struct option opts[] = {{"listen", required_argument, 0, 'l'},
                                         {"web-root", required_argument, 0, 'w'},
                                         {"metrics-markdown", no_argument, 0, 'M'},
                                         {"routes-markdown", no_argument, 0, 'R'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *listen = conf->serve_listen;
    const char *web_root = NULL;
    int c;
    while ((c = getopt_long(argc, argv, "l:w:h", opts, NULL)) != -1) {
        switch (c) {
        case 'l':
            listen = optarg;
            break;
        case 'w':
            web_root = optarg;
            break;
        case 'M':
            return serve_print(fr_stats_markdown);
        case 'R':
            return serve_print(fr_serve_routes_markdown);
        case 'h':
            serve_usage(stdout);
            return 0;
        default:
            serve_usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "freshet serve: unexpected argument \"%s\"\n", argv[optind]);
        return 2;
    }
    char root[PATH_MAX];
    if (web_root) {
        snprintf(root, sizeof root, "%s", web_root);
    } else {
        serve_web_root(conf, self, root, sizeof root);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = serve_on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    struct fr_serve_opts sopts = {
        .data_dir = conf->general_data_dir,
        .listen = listen,
        .web_root = root,
        .api_token = conf->serve_api_token,
        .max_connections = (int)conf->serve_max_connections,
        .max_streams = (int)conf->serve_max_streams,
        .timeout_s = (int)conf->serve_timeout_s,
        .request_max_bytes = (size_t)conf->serve_request_max_bytes,
        .self = self,
        .global_args = global_args,
        .nglobal = nglobal,
        .conf = conf,
    };
    struct fr_serve *srv = NULL;
    if (fr_serve_start(&sopts, &srv) < 0) {
        return 1;
    }
    /* The host as given, the port as bound (port 0 picks one). */
    char host[256];
    snprintf(host, sizeof host, "%s", listen);
    char *colon = strrchr(host, ':');
    if (colon) {
        *colon = 0;
    }
    printf("listening http://%s:%d/\n", host, fr_serve_port(srv));
    fflush(stdout);
    fr_info("serve", "serving %s on http://%s:%d/ (web root %s; job endpoints %s)",
            conf->general_data_dir, host, fr_serve_port(srv), root,
            conf->serve_api_token && conf->serve_api_token[0] ? "enabled" : "disabled");
    while (!serve_stop_flag) {
        fr_sleep_ms(100);
    }
    fr_info("serve", "stopping");
    fr_serve_stop(srv);
    return 0;
}
