/*
 * mhd.c — libmicrohttpd, opened on first use (lazy.h, docs/adr/0027): only
 * `freshet serve` and `freshet feed --listen` need it; and the logger both
 * give their daemons (fr_mhd_log).
 *
 * The two info getters are variadic for historical reasons: no info type
 * freshet asks for reads an argument after the type, so none is passed on.
 */
#include "lazy/mhd.h"

#include "core/diag.h"
#include "lazy/lazy.h"

#include <stdio.h>
#include <string.h>

typedef const union MHD_ConnectionInfo *conn_info_t;
typedef const union MHD_DaemonInfo *daemon_info_t;

#define MHD_FUNCS(X)                                                                       \
    X(enum MHD_Result, MHD_add_response_header,                                            \
      (struct MHD_Response * response, const char *header, const char *content),          \
      (response, header, content), MHD_NO)                                                 \
    X(struct MHD_Response *, MHD_create_response_from_buffer,                              \
      (size_t size, void *buffer, enum MHD_ResponseMemoryMode mode), (size, buffer, mode), \
      NULL)                                                                                \
    X(struct MHD_Response *, MHD_create_response_from_callback,                            \
      (uint64_t size, size_t block_size, MHD_ContentReaderCallback crc, void *crc_cls,     \
       MHD_ContentReaderFreeCallback crfc),                                                \
      (size, block_size, crc, crc_cls, crfc), NULL)                                        \
    X(struct MHD_Response *, MHD_create_response_from_fd_at_offset64,                      \
      (uint64_t size, int fd, uint64_t offset), (size, fd, offset), NULL)                  \
    X(const char *, MHD_lookup_connection_value,                                           \
      (struct MHD_Connection * connection, enum MHD_ValueKind kind, const char *key),     \
      (connection, kind, key), NULL)                                                       \
    X(enum MHD_Result, MHD_queue_response,                                                 \
      (struct MHD_Connection * connection, unsigned int status_code,                       \
       struct MHD_Response *response),                                                     \
      (connection, status_code, response), MHD_NO)                                         \
    X(MHD_socket, MHD_quiesce_daemon, (struct MHD_Daemon * daemon), (daemon), MHD_INVALID_SOCKET)

#define MHD_VOIDS(X)                                                                       \
    X(MHD_destroy_response, (struct MHD_Response * response), (response))                  \
    X(MHD_resume_connection, (struct MHD_Connection * connection), (connection))           \
    X(MHD_stop_daemon, (struct MHD_Daemon * daemon), (daemon))                             \
    X(MHD_suspend_connection, (struct MHD_Connection * connection), (connection))

#define MHD_EXTRA(X)                                                                       \
    X(MHD_start_daemon, , ) X(MHD_get_connection_info, , ) X(MHD_get_daemon_info, , )

LAZY_LIBRARY(mhd_dl, "libmicrohttpd.so.12", "libmicrohttpd12", MHD_FUNCS, MHD_VOIDS, MHD_EXTRA);

#define MHD_STUB(ret, name, params, args, fail) LAZY_STUB(mhd_dl, ret, name, params, args, fail)
#define MHD_VSTUB(name, params, args) LAZY_VSTUB(mhd_dl, name, params, args)
MHD_FUNCS(MHD_STUB)
MHD_VOIDS(MHD_VSTUB)

LAZY_HIDDEN conn_info_t(MHD_get_connection_info)(struct MHD_Connection *connection,
                                                 enum MHD_ConnectionInfoType info_type, ...)
{
    if (fr_dl_ready(&mhd_dl) != 0) {
        return NULL;
    }
    return LAZY_FN(mhd_dl, MHD_get_connection_info)(connection, info_type);
}

LAZY_HIDDEN daemon_info_t(MHD_get_daemon_info)(struct MHD_Daemon *daemon,
                                               enum MHD_DaemonInfoType info_type, ...)
{
    if (fr_dl_ready(&mhd_dl) != 0) {
        return NULL;
    }
    return LAZY_FN(mhd_dl, MHD_get_daemon_info)(daemon, info_type);
}

struct MHD_Daemon *fr_mhd_start_daemon(unsigned int flags, uint16_t port,
                                       MHD_AcceptPolicyCallback apc, void *apc_cls,
                                       MHD_AccessHandlerCallback dh, void *dh_cls,
                                       const struct MHD_OptionItem *options)
{
    if (fr_dl_ready(&mhd_dl) != 0) {
        return NULL;
    }
    return LAZY_FN(mhd_dl, MHD_start_daemon)(flags, port, apc, apc_cls, dh, dh_cls,
                                             MHD_OPTION_ARRAY, options, MHD_OPTION_END);
}

void fr_mhd_log(void *cls, const char *fmt, va_list ap)
{
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r')) {
        msg[--n] = 0;
    }
    fr_debug((const char *)cls, "http: %s", msg);
}
