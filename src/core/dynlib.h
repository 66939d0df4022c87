/*
 * dynlib.h — a shared library opened on first use (dlopen), with a table of
 * its functions resolved at once (dlsym), for the dependencies that only some
 * commands and modes need (docs/adr/0027-optional-libraries-loaded-on-use.md).
 *
 * Linking such a library (DT_NEEDED) maps it, and everything it depends on,
 * into every process at start: libcurl and libmicrohttpd bring GnuTLS,
 * Kerberos, LDAP and more; librdkafka OpenSSL; libsnappy the C++ runtime.
 * Their relocated pages alone are about 6 MB of RSS in a live `freshet
 * process` that uses none of them. src/lazy/ defines each such library's
 * functions under their own names (so call sites and prototypes are the
 * headers' own; the compiler checks every stub against them); each stub
 * calls fr_dl_load and then the library's function.
 *
 * States (under mu; state is read without the lock once it is final):
 *   UNTRIED --load ok--> LOADED     (every name resolved; never unloaded)
 *   UNTRIED --dlopen or dlsym fails--> FAILED (logged once, with the reason
 *                                              and the package to install)
 * A FAILED library stays failed for the process: callers get the library's
 * own failure value (curl_easy_init returns NULL, and so on).
 * Thread-safe: any thread may call fr_dl_load.
 */
#ifndef FR_CORE_DYNLIB_H
#define FR_CORE_DYNLIB_H

#include <pthread.h>
#include <stdatomic.h>

enum fr_dl_state { FR_DL_UNTRIED = 0, FR_DL_LOADED, FR_DL_FAILED };

struct fr_dl {
    const char *soname;       /* "libcurl.so.4": the soname the linker would record */
    const char *package;      /* the Debian package that ships it, for the message */
    const char *const *names; /* n function names, in table order */
    void **fns;               /* n slots, filled by fr_dl_load */
    unsigned n;
    pthread_mutex_t mu;
    atomic_int state;
    char err[256];
};

#define FR_DL_INIT(soname, package, names, fns)                                            \
    {(soname), (package), (names), (fns), sizeof(names) / sizeof((names)[0]),             \
     PTHREAD_MUTEX_INITIALIZER, 0, ""}

/* FR_OK once the library and all its names are resolved; FR_ENOTFOUND when
 * it cannot be (the reason is in fr_dl_error and was logged once). */
int fr_dl_load(struct fr_dl *dl);

static inline int fr_dl_ready(struct fr_dl *dl)
{
    return atomic_load_explicit(&dl->state, memory_order_acquire) == FR_DL_LOADED ? 0
                                                                                  : fr_dl_load(dl);
}

/* Why the library could not be loaded ("" while it has not failed). */
const char *fr_dl_error(struct fr_dl *dl);

/* 1 when soname is mapped into this process (/proc/self/maps), else 0. */
int fr_dl_mapped(const char *soname);

#endif
