/*
 * mhd.h — starting a libmicrohttpd daemon through the lazily opened library
 * (src/lazy/mhd.c). MHD_start_daemon takes its options as a variadic list,
 * which a stub cannot pass on, so it is not offered: callers give the
 * options as an array (MHD_OPTION_ARRAY's form, ended by MHD_OPTION_END).
 */
#ifndef FR_LAZY_MHD_H
#define FR_LAZY_MHD_H

#include <microhttpd.h>
#include <stdarg.h>

struct MHD_Daemon *fr_mhd_start_daemon(unsigned int flags, uint16_t port,
                                       MHD_AcceptPolicyCallback apc, void *apc_cls,
                                       MHD_AccessHandlerCallback dh, void *dh_cls,
                                       const struct MHD_OptionItem *options);

/* An MHD_OPTION_EXTERNAL_LOGGER for every daemon: libmicrohttpd's own
 * messages (e.g. a connection closed while a stream was being generated,
 * as happens at every stop) through freshet's logger at debug, as
 * "COMPONENT: http: MESSAGE" without the trailing newline; they are about
 * one connection, never about the server. cls is the component's name (a
 * string that outlives the daemon). */
void fr_mhd_log(void *cls, const char *fmt, va_list ap);

#endif
