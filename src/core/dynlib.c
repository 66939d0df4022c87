/*
 * dynlib.c — see dynlib.h. dlopen with RTLD_NOW (every symbol the library
 * needs is bound before its first call, so a broken installation fails here
 * and not in the middle of a request) and RTLD_LOCAL (its names stay out of
 * the global scope).
 */
#include "core/dynlib.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "core/diag.h"
#include "core/err.h"

int fr_dl_load(struct fr_dl *dl)
{
    int state = atomic_load_explicit(&dl->state, memory_order_acquire);
    if (state != FR_DL_UNTRIED) {
        return state == FR_DL_LOADED ? FR_OK : FR_ENOTFOUND;
    }
    pthread_mutex_lock(&dl->mu);
    state = atomic_load_explicit(&dl->state, memory_order_relaxed);
    if (state == FR_DL_UNTRIED) {
        void *h = dlopen(dl->soname, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            const char *why = dlerror();
            snprintf(dl->err, sizeof dl->err, "cannot load %s: %s (Debian package %s)",
                     dl->soname, why ? why : "unknown error", dl->package);
        }
        for (unsigned i = 0; h && i < dl->n; i++) {
            dlerror();
            dl->fns[i] = dlsym(h, dl->names[i]);
            if (!dl->fns[i]) {
                const char *why = dlerror();
                snprintf(dl->err, sizeof dl->err, "%s has no function %s: %s (Debian package %s)",
                         dl->soname, dl->names[i], why ? why : "unknown error", dl->package);
                dlclose(h);
                h = NULL;
            }
        }
        state = h ? FR_DL_LOADED : FR_DL_FAILED;
        if (!h) {
            fr_error("dl", "%s", dl->err);
        }
        atomic_store_explicit(&dl->state, state, memory_order_release);
    }
    pthread_mutex_unlock(&dl->mu);
    return state == FR_DL_LOADED ? FR_OK : FR_ENOTFOUND;
}

const char *fr_dl_error(struct fr_dl *dl)
{
    return atomic_load_explicit(&dl->state, memory_order_acquire) == FR_DL_FAILED ? dl->err : "";
}

int fr_dl_mapped(const char *soname)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) {
        return 0;
    }
    char line[1024];
    size_t n = strlen(soname);
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        const char *slash = strrchr(line, '/');
        found = slash && strncmp(slash + 1, soname, n) == 0;
    }
    fclose(f);
    return found;
}
