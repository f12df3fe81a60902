#include "server/extsigner/extsigner.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "build_info.h" /* generated: OIDC_BUILD_COMMIT, OIDC_BUILD_DATE */
#include "server/extsigner/module.h"

#define EXTSIGNER_NPLACES 3

struct extsigner {
    const struct extsigner_module *module;
    struct extsigner_grpc *grpc;
};

/* Adds dir/file to the places, unless longer than a path can be. */
static void extsigner_add_place(char places[][PATH_MAX], size_t *n, const char *dir, const char *file)
{
    if ((size_t)snprintf(places[*n], PATH_MAX, "%s/%s", dir, file) < PATH_MAX)
        (*n)++;
}

/* The places the module may be, in the order extsigner.h gives. The
 * executable's directory comes from /proc/self/exe; without it (no /proc)
 * only the compiled-in one is left. Returns how many. */
static size_t extsigner_places(char places[EXTSIGNER_NPLACES][PATH_MAX])
{
    char dir[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", dir, sizeof(dir) - 1);
    char *slash;
    size_t n = 0;

    if (len > 0) {
        dir[len] = '\0';
        if ((slash = strrchr(dir, '/')) != NULL) {
            *slash = '\0';
            extsigner_add_place(places, &n, dir, EXTSIGNER_MODULE_FILE);
            extsigner_add_place(places, &n, dir, OIDC_EXTSIGNER_FROM_BINDIR "/" EXTSIGNER_MODULE_FILE);
        }
    }
    extsigner_add_place(places, &n, OIDC_EXTSIGNER_LIBDIR, EXTSIGNER_MODULE_FILE);
    return n;
}

/* Opens the module at path and takes its table. The handle is never
 * closed: it is loaded once per process (extsigner_start may run
 * again, on a restart of the signer) and unloading it would gain nothing. */
static const struct extsigner_module *extsigner_open(const char *path, char *err, size_t errlen)
{
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    const struct extsigner_module *(*entry)(void);
    const struct extsigner_module *m;

    if (handle == NULL) {
        snprintf(err, errlen,
                 "--external-signer-listen: cannot load the external signer's module: %s (are libnghttp2-14 and "
                 "libprotobuf-c1 installed?)",
                 dlerror());
        return NULL;
    }
    *(void **)&entry = dlsym(handle, EXTSIGNER_MODULE_ENTRY);
    if (entry == NULL || (m = entry()) == NULL) {
        snprintf(err, errlen, "--external-signer-listen: %s is not oidc-discovery's external signer module (no %s)",
                 path, EXTSIGNER_MODULE_ENTRY);
        return NULL;
    }
    if (strcmp(m->build, EXTSIGNER_MODULE_BUILD) != 0) {
        snprintf(err, errlen,
                 "--external-signer-listen: the external signer's module %s is from oidc-discovery %s, this "
                 "binary is %s; install both from the same build",
                 path, m->build, EXTSIGNER_MODULE_BUILD);
        return NULL;
    }
    return m;
}

/* The module, loaded from the first place where a file is. */
static const struct extsigner_module *extsigner_load(char *err, size_t errlen)
{
    char places[EXTSIGNER_NPLACES][PATH_MAX];
    size_t n = extsigner_places(places), used;
    struct stat st;

    for (size_t i = 0; i < n; i++)
        if (stat(places[i], &st) == 0)
            return extsigner_open(places[i], err, errlen);
    used = (size_t)snprintf(err, errlen,
                            "--external-signer-listen: the external signer's module %s is not installed; tried",
                            EXTSIGNER_MODULE_FILE);
    for (size_t i = 0; i < n && used < errlen; i++)
        used += (size_t)snprintf(err + used, errlen - used, " %s%s", places[i], i + 1 < n ? "," : "");
    if (used < errlen)
        snprintf(err + used, errlen - used, " (cmake --install puts it in %s)", OIDC_EXTSIGNER_LIBDIR);
    return NULL;
}

struct extsigner *extsigner_start(const struct config *cfg, struct signer_slot *slot, char *err, size_t errlen)
{
    const struct extsigner_module *m = extsigner_load(err, errlen);
    struct extsigner *x;

    if (m == NULL)
        return NULL;
    if ((x = calloc(1, sizeof(*x))) == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    x->module = m;
    if ((x->grpc = m->start(cfg, slot, err, errlen)) == NULL) {
        free(x);
        return NULL;
    }
    return x;
}

void extsigner_stop(struct extsigner *x)
{
    if (x == NULL)
        return;
    x->module->stop(x->grpc);
    free(x);
}
