/*
 * lazy.h — the stubs' shared machinery (the files of src/lazy; core/dynlib.h says
 * why). A library's functions are listed once, as
 *   X(return type, name, (parameters), (arguments), value when not loaded)
 * and LAZY_STUBS(list, dl, index prefix) defines each function under its own
 * name: it loads the library on first use and calls through the resolved
 * pointer. LAZY_VOIDS does the same for functions returning void (nothing
 * happens when the library is absent: no handle it could release exists).
 * The stubs are hidden: the executable never exports them, so a library
 * opened later still binds to its own functions, never to ours.
 */
#ifndef FR_LAZY_H
#define FR_LAZY_H

#include "core/dynlib.h"

#define LAZY_HIDDEN __attribute__((visibility("hidden")))

#define LAZY_ENUM(ret, name, params, args, ...) LAZY_IX_##name,
#define LAZY_NAME(ret, name, params, args, ...) #name,
#define LAZY_VENUM(name, params, args) LAZY_IX_##name,
#define LAZY_VNAME(name, params, args) #name,

/* One library: FUNCS and VOIDS are X-lists, EXTRA names more functions
 * (resolved too, called by hand-written stubs through LAZY_FN). */
#define LAZY_LIBRARY(var, soname, package, FUNCS, VOIDS, EXTRA)                            \
    enum { FUNCS(LAZY_ENUM) VOIDS(LAZY_VENUM) EXTRA(LAZY_VENUM) LAZY_N_##var };            \
    static const char *const var##_names[] = {FUNCS(LAZY_NAME) VOIDS(LAZY_VNAME)          \
                                                  EXTRA(LAZY_VNAME)};                      \
    static void *var##_fns[LAZY_N_##var];                                                  \
    static struct fr_dl var = FR_DL_INIT(soname, package, var##_names, var##_fns)

/* Call the resolved function `name` with the prototype of `name`. */
#define LAZY_FN(var, name) ((__typeof__(&name))var##_fns[LAZY_IX_##name])

#define LAZY_STUB(var, ret, name, params, args, fail)                                      \
    LAZY_HIDDEN ret(name) params                                                           \
    {                                                                                      \
        if (fr_dl_ready(&var) != 0) {                                                      \
            return fail;                                                                   \
        }                                                                                  \
        return LAZY_FN(var, name) args;                                                    \
    }
#define LAZY_VSTUB(var, name, params, args)                                                \
    LAZY_HIDDEN void(name) params                                                          \
    {                                                                                      \
        if (fr_dl_ready(&var) == 0) {                                                      \
            LAZY_FN(var, name) args;                                                       \
        }                                                                                  \
    }

#define LAZY_NONE(X)

#endif
