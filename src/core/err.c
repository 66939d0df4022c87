/*
 * err.c — lookup functions over the error table in err.h. Pure, constant
 * data: safe from any thread.
 */
#include "core/err.h"

#include <errno.h>

struct err_row {
    int code;
    enum fr_err_class cls;
    const char *name;
    const char *msg;
};

static const struct err_row err_rows[] = {
#define FR_ERR_ROW(name, val, cls, msg) {(val), FR_ERRC_##cls, #name, (msg)},
    FR_ERR_TABLE(FR_ERR_ROW)
#undef FR_ERR_ROW
};

static const struct err_row *err_find(int code)
{
    for (unsigned i = 0; i < sizeof err_rows / sizeof err_rows[0]; i++) {
        if (err_rows[i].code == code) {
            return &err_rows[i];
        }
    }
    return 0;
}

const char *fr_strerror(int code)
{
    const struct err_row *row = err_find(code);
    return row ? row->msg : "unknown error code";
}

const char *fr_err_name(int code)
{
    const struct err_row *row = err_find(code);
    return row ? row->name : "FR_E?";
}

enum fr_err_class fr_err_class(int code)
{
    const struct err_row *row = err_find(code);
    return row ? row->cls : FR_ERRC_OK;
}

int fr_err_from_errno(int errnum)
{
    switch (errnum) {
    case 0: return FR_OK;
    case ENOMEM: return FR_ENOMEM;
    case ENOSPC:
    case EDQUOT: return FR_ENOSPC;
    case ENOENT: return FR_ENOTFOUND;
    case EEXIST: return FR_EEXIST;
    case EINVAL: return FR_EINVAL;
    case EAGAIN: return FR_EAGAIN;
    case ETIMEDOUT: return FR_ETIMEOUT;
    case EBUSY: return FR_EBUSY;
    case EACCES:
    case EPERM: return FR_EFORBIDDEN;
    case EFBIG: return FR_ETOOBIG;
    default: return FR_EIO;
    }
}
