/*
 * curl.c — libcurl, opened on first use (lazy.h, docs/adr/0027). Needed by
 * ingest's SSE client, the S3 warehouse, the REST catalog client and the
 * enrichment client; not by `freshet process` on embedded defaults.
 *
 * The two variadic functions take exactly one argument after the option,
 * whose type curl encodes in the option's number (curl.h: CURLOPTTYPE_*,
 * CURLINFO_TYPEMASK), so each is read with its own type and passed on.
 */
#define CURL_DISABLE_TYPECHECK /* plain prototypes for curl_easy_setopt/getinfo */
#include <curl/curl.h>
#include <stdarg.h>

#include "lazy/lazy.h"

#define NOT_LOADED "libcurl could not be loaded"

#define CURL_FUNCS(X)                                                                      \
    X(CURLcode, curl_global_init, (long flags), (flags), CURLE_FAILED_INIT)               \
    X(CURL *, curl_easy_init, (void), (), NULL)                                            \
    X(CURLcode, curl_easy_perform, (CURL * curl), (curl), CURLE_FAILED_INIT)               \
    X(char *, curl_easy_escape, (CURL * handle, const char *string, int length),          \
      (handle, string, length), NULL)                                                      \
    X(const char *, curl_easy_strerror, (CURLcode code), (code), NOT_LOADED)               \
    X(CURLM *, curl_multi_init, (void), (), NULL)                                          \
    X(CURLMcode, curl_multi_add_handle, (CURLM * multi_handle, CURL * curl_handle),        \
      (multi_handle, curl_handle), CURLM_INTERNAL_ERROR)                                   \
    X(CURLMcode, curl_multi_remove_handle, (CURLM * multi_handle, CURL * curl_handle),     \
      (multi_handle, curl_handle), CURLM_INTERNAL_ERROR)                                   \
    X(CURLMcode, curl_multi_cleanup, (CURLM * multi_handle), (multi_handle),               \
      CURLM_INTERNAL_ERROR)                                                                \
    X(CURLMsg *, curl_multi_info_read, (CURLM * multi_handle, int *msgs_in_queue),         \
      (multi_handle, msgs_in_queue), NULL)                                                 \
    X(CURLMcode, curl_multi_perform, (CURLM * multi_handle, int *running_handles),         \
      (multi_handle, running_handles), CURLM_INTERNAL_ERROR)                               \
    X(CURLMcode, curl_multi_poll,                                                          \
      (CURLM * multi_handle, struct curl_waitfd extra_fds[], unsigned int extra_nfds,      \
       int timeout_ms, int *ret),                                                          \
      (multi_handle, extra_fds, extra_nfds, timeout_ms, ret), CURLM_INTERNAL_ERROR)        \
    X(const char *, curl_multi_strerror, (CURLMcode code), (code), NOT_LOADED)             \
    X(struct curl_slist *, curl_slist_append, (struct curl_slist * list, const char *data), \
      (list, data), NULL)                                                                  \
    X(CURLU *, curl_url, (void), (), NULL)                                                 \
    X(CURLUcode, curl_url_get, (CURLU * handle, CURLUPart what, char **part, unsigned int flags), \
      (handle, what, part, flags), CURLUE_OUT_OF_MEMORY)                                   \
    X(CURLUcode, curl_url_set,                                                             \
      (CURLU * handle, CURLUPart what, const char *part, unsigned int flags),              \
      (handle, what, part, flags), CURLUE_OUT_OF_MEMORY)

#define CURL_VOIDS(X)                                                                      \
    X(curl_easy_cleanup, (CURL * curl), (curl))                                            \
    X(curl_easy_reset, (CURL * curl), (curl))                                              \
    X(curl_free, (void *p), (p))                                                           \
    X(curl_global_cleanup, (void), ())                                                     \
    X(curl_slist_free_all, (struct curl_slist * list), (list))                             \
    X(curl_url_cleanup, (CURLU * handle), (handle))

#define CURL_EXTRA(X) X(curl_easy_setopt, , ) X(curl_easy_getinfo, , )

LAZY_LIBRARY(curl_dl, "libcurl.so.4", "libcurl4", CURL_FUNCS, CURL_VOIDS, CURL_EXTRA);

#define CURL_STUB(ret, name, params, args, fail) LAZY_STUB(curl_dl, ret, name, params, args, fail)
#define CURL_VSTUB(name, params, args) LAZY_VSTUB(curl_dl, name, params, args)
CURL_FUNCS(CURL_STUB)
CURL_VOIDS(CURL_VSTUB)

LAZY_HIDDEN CURLcode(curl_easy_setopt)(CURL *curl, CURLoption option, ...)
{
    if (fr_dl_ready(&curl_dl) != 0) {
        return CURLE_FAILED_INIT;
    }
    CURLcode (*fn)(CURL *, CURLoption, ...) = LAZY_FN(curl_dl, curl_easy_setopt);
    va_list ap;
    va_start(ap, option);
    CURLcode rc;
    if (option < CURLOPTTYPE_OBJECTPOINT) {
        rc = fn(curl, option, va_arg(ap, long));
    } else if (option < CURLOPTTYPE_FUNCTIONPOINT) {
        rc = fn(curl, option, va_arg(ap, void *));
    } else if (option < CURLOPTTYPE_OFF_T) {
        rc = fn(curl, option, va_arg(ap, void (*)(void)));
    } else if (option < CURLOPTTYPE_BLOB) {
        rc = fn(curl, option, va_arg(ap, curl_off_t));
    } else {
        rc = fn(curl, option, va_arg(ap, void *)); /* struct curl_blob * */
    }
    va_end(ap);
    return rc;
}

LAZY_HIDDEN CURLcode(curl_easy_getinfo)(CURL *curl, CURLINFO info, ...)
{
    if (fr_dl_ready(&curl_dl) != 0) {
        return CURLE_FAILED_INIT;
    }
    CURLcode (*fn)(CURL *, CURLINFO, ...) = LAZY_FN(curl_dl, curl_easy_getinfo);
    va_list ap;
    va_start(ap, info);
    CURLcode rc = fn(curl, info, va_arg(ap, void *)); /* every CURLINFO_* takes a pointer */
    va_end(ap);
    return rc;
}
