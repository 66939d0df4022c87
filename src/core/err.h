/*
 * err.h — freshet's one error space.
 *
 * Every fallible function returns 0 (FR_OK) or a negative code from the
 * table below; positive values are results (counts, lengths). Each code is
 * classed as RETRY (the same call may succeed later: a peer was busy, a
 * network dropped), FATAL (a bug or an environment the process cannot work
 * in) or DATA (the input is bad: count it, dead-letter it, move on).
 *
 * Codes are never reused or renumbered: scripts and logs may depend on the
 * names. Add new codes at the end of the table only. Thread-safe: the table
 * is constant.
 */
#ifndef FR_ERR_H
#define FR_ERR_H

enum fr_err_class { FR_ERRC_OK = 0, FR_ERRC_RETRY, FR_ERRC_FATAL, FR_ERRC_DATA };

/*     name              value class   message */
#define FR_ERR_TABLE(X)                                                          \
    X(FR_OK,              0,  OK,    "success")                                  \
    X(FR_ENOMEM,         -1,  FATAL, "out of memory")                            \
    X(FR_EIO,            -2,  RETRY, "input/output error")                       \
    X(FR_EINVAL,         -3,  FATAL, "invalid argument")                         \
    X(FR_ECORRUPT,       -4,  DATA,  "corrupt data")                             \
    X(FR_ECRC,           -5,  DATA,  "checksum mismatch")                        \
    X(FR_ETRUNC,         -6,  DATA,  "truncated data")                           \
    X(FR_ETOOBIG,        -7,  DATA,  "value exceeds its size limit")             \
    X(FR_ENOSPC,         -8,  RETRY, "no space left on device")                  \
    X(FR_ENOTFOUND,      -9,  FATAL, "not found")                                \
    X(FR_EEXIST,        -10,  FATAL, "already exists")                           \
    X(FR_ETIMEOUT,      -11,  RETRY, "timed out")                                \
    X(FR_EAGAIN,        -12,  RETRY, "resource temporarily unavailable")         \
    X(FR_ECLOSED,       -13,  RETRY, "closed by peer")                           \
    X(FR_EPROTO,        -14,  DATA,  "protocol violation")                       \
    X(FR_EHTTP,         -15,  RETRY, "HTTP error status")                        \
    X(FR_ECONFIG,       -16,  FATAL, "configuration error")                      \
    X(FR_EUNSUPPORTED,  -17,  FATAL, "not supported")                            \
    X(FR_ERANGE,        -18,  DATA,  "value out of range")                       \
    X(FR_EUTF8,         -19,  DATA,  "invalid UTF-8")                            \
    X(FR_ECONFLICT,     -20,  RETRY, "concurrent modification, retry")           \
    X(FR_EBUSY,         -21,  RETRY, "resource busy")                            \
    X(FR_EABORTED,      -22,  RETRY, "operation aborted")                        \
    X(FR_ESTATE,        -23,  FATAL, "operation not valid in this state")        \
    X(FR_EJSON,         -24,  DATA,  "malformed JSON")                           \
    X(FR_EFORBIDDEN,    -25,  FATAL, "forbidden by peer")                        \
    X(FR_ELOCKED,       -26,  FATAL, "locked by another process")                \
    X(FR_EEOF,          -27,  OK,    "end of data")                              \
    X(FR_ECREDENTIAL,   -28,  FATAL, "credential rejected (wrong, expired or not allowed)") \
    X(FR_EUNAVAILABLE,  -29,  RETRY, "service unavailable after retries")        \
    X(FR_EREFUSED,      -30,  FATAL, "request refused by peer")                  \
    X(FR_EKAFKA,        -32,  RETRY, "Kafka broker unavailable or request failed") \
    X(FR_EKAFKA_FATAL,  -33,  FATAL, "Kafka client fatal error")                 \
    X(FR_EKAFKA_AUTH,   -34,  FATAL, "Kafka authentication or authorisation failed") \
    X(FR_EREQUIREMENT,  -36,  RETRY, "commit requirement not met; reload and retry") \
    X(FR_EUNKNOWN,      -37,  RETRY, "commit outcome unknown; reload before retrying") \
    X(FR_ENOTEMPTY,     -38,  FATAL, "not empty")                                \
    X(FR_ERATELIMIT,    -40,  RETRY, "rate limited by peer (HTTP 429)")          \
    X(FR_EMAXLAG,       -41,  RETRY, "peer's database is lagged (maxlag)")       \
    X(FR_EAPI,          -42,  FATAL, "API answered with an error")

enum fr_err {
#define FR_ERR_ENUM(name, val, cls, msg) name = (val),
    FR_ERR_TABLE(FR_ERR_ENUM)
#undef FR_ERR_ENUM
};

/* Human-readable message for code; never NULL; unknown codes get a fixed text. */
const char *fr_strerror(int code);
/* The code's symbolic name ("FR_ECRC"); never NULL. */
const char *fr_err_name(int code);
/* RETRY, FATAL or DATA for a negative code; OK for 0 and unknown codes. */
enum fr_err_class fr_err_class(int code);
/* Map an errno value to the closest freshet code (ENOSPC -> FR_ENOSPC, ...). */
int fr_err_from_errno(int errnum);

#endif
