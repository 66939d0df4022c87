/*
 * test_conf.c — configuration: defaults are in range, files and --set
 * override in order, and every error names the key.
 */
#include "check.h"

#include "conf/conf.h"
#include "core/err.h"

static const char *write_ini(const char *text)
{
    static char path[4200];
    snprintf(path, sizeof path, "%s/conf.ini", check_tmpdir());
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

static void test_defaults(void)
{
    struct fr_conf conf;
    CHECK_EQ_INT(fr_conf_init(&conf), FR_OK);
    CHECK_EQ_STR(conf.general_data_dir, "./freshet-data");
    CHECK_EQ_INT(conf.log_partitions, 1);
    CHECK_EQ_INT(conf.log_fsync_bytes, 4194304);
    CHECK_EQ_STR(conf.serve_listen, "127.0.0.1:8787");
    fr_conf_free(&conf);
    fr_conf_free(NULL);
}

static void test_file_and_flags(void)
{
    struct fr_conf conf;
    char err[512] = "";
    fr_conf_init(&conf);
    const char *path = write_ini("[log]\npartitions = 4\nfsync_bytes = 8m\n"
                                 "[ingest]\nsource_url = http://127.0.0.1:1/x\n");
    CHECK_EQ_INT(fr_conf_load_file(&conf, path, err, sizeof err), FR_OK);
    CHECK_EQ_INT(conf.log_partitions, 4);
    CHECK_EQ_INT(conf.log_fsync_bytes, 8 * 1024 * 1024);
    CHECK_EQ_STR(conf.ingest_source_url, "http://127.0.0.1:1/x");
    CHECK_EQ_INT(fr_conf_set(&conf, "log.partitions=2", FR_CONF_FLAG, err, sizeof err), FR_OK);
    CHECK_EQ_INT(conf.log_partitions, 2);
    fr_conf_free(&conf);
}

static void test_errors_name_the_key(void)
{
    struct fr_conf conf;
    char err[512];
    fr_conf_init(&conf);
    const char *path = write_ini("[log]\nparttions = 4\n");
    CHECK_EQ_INT(fr_conf_load_file(&conf, path, err, sizeof err), FR_ECONFIG);
    CHECK(strstr(err, "log.parttions") != NULL);

    path = write_ini("[log]\npartitions = 65\n");
    CHECK_EQ_INT(fr_conf_load_file(&conf, path, err, sizeof err), FR_ECONFIG);
    CHECK(strstr(err, "log.partitions") != NULL && strstr(err, "out of range") != NULL);

    path = write_ini("[log]\npartitions = four\n");
    CHECK_EQ_INT(fr_conf_load_file(&conf, path, err, sizeof err), FR_ECONFIG);
    CHECK(strstr(err, "log.partitions") != NULL);

    path = write_ini("[serve]\napi_token = hunter2\n");
    CHECK_EQ_INT(fr_conf_load_file(&conf, path, err, sizeof err), FR_ECONFIG);
    CHECK(strstr(err, "FRESHET_SERVE_API_TOKEN") != NULL);
    CHECK(strstr(err, "hunter2") == NULL);

    CHECK_EQ_INT(fr_conf_set(&conf, "nosuch.key=1", FR_CONF_FLAG, err, sizeof err), FR_ECONFIG);
    CHECK(strstr(err, "nosuch.key") != NULL);
    CHECK_EQ_INT(fr_conf_set(&conf, "garbage", FR_CONF_FLAG, err, sizeof err), FR_ECONFIG);
    CHECK_EQ_INT(fr_conf_set(&conf, "ingest.stall_timeout_s=0", FR_CONF_FLAG, err, sizeof err),
                 FR_ECONFIG);
    CHECK(strstr(err, "ingest.stall_timeout_s") != NULL);
    CHECK_EQ_INT(fr_conf_load_file(&conf, "/nonexistent/freshet.ini", err, sizeof err),
                 FR_ECONFIG);
    fr_conf_free(&conf);
}

static void test_secret_from_env_never_printed(void)
{
    struct fr_conf conf;
    char err[512];
    fr_conf_init(&conf);
    setenv("FRESHET_SERVE_API_TOKEN", "s3cr3t-value", 1);
    CHECK_EQ_INT(fr_conf_load_env(&conf, err, sizeof err), FR_OK);
    CHECK_EQ_STR(conf.serve_api_token, "s3cr3t-value");
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    fr_conf_print(&conf, mem);
    fclose(mem);
    CHECK(strstr(text, "s3cr3t-value") == NULL);
    CHECK(strstr(text, "(set)") != NULL);
    free(text);
    fr_conf_free(&conf);
}

int main(void)
{
    RUN(test_defaults);
    RUN(test_file_and_flags);
    RUN(test_errors_name_the_key);
    RUN(test_secret_from_env_never_printed);
    return check_report();
}
