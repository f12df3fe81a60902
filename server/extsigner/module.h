/*
 * module: what oidc-discovery-extsigner.so (grpc_server.c, grpc_conn.c,
 * unix_socket.c, service.c and the generated messages, linked with
 * nghttp2 and protobuf-c) gives the executable that loads it (extsigner.c): one exported function that
 * returns a table of the signer's start and stop, with the build the module
 * comes from.
 *
 * Why one table rather than a symbol per function: one dlsym, one check of
 * the build, and nothing else of the module is reachable by name (it is
 * built with hidden visibility).
 *
 * The module calls back into the executable for what must exist once in
 * the process: the signer slot and states (jose/signer.h), log_msg and
 * metrics_signer. The executable exports those, and only those
 * (OIDC_EXTSIGNER_HOST_SYMBOLS in CMakeLists.txt); the module is loaded
 * with RTLD_NOW, so a symbol missing there fails the load, not a call.
 */
#ifndef OIDC_EXTSIGNER_MODULE_H
#define OIDC_EXTSIGNER_MODULE_H

#include <stddef.h>

#include "config/config.h"
#include "jose/signer.h"

#define EXTSIGNER_MODULE_FILE  "oidc-discovery-extsigner.so"
#define EXTSIGNER_MODULE_ENTRY "oidc_extsigner_module"

/* The build a module or an executable comes from (build_info.h must be
 * included): a module of another build may read struct config with
 * another layout, so the two must match exactly. */
#define EXTSIGNER_MODULE_BUILD OIDC_VERSION " (commit " OIDC_BUILD_COMMIT ", built " OIDC_BUILD_DATE ")"

struct extsigner_grpc;

struct extsigner_module {
    const char *build; /* EXTSIGNER_MODULE_BUILD of the module */
    /* grpc_server.h's extsigner_grpc_start and extsigner_grpc_stop */
    struct extsigner_grpc *(*start)(const struct config *cfg, struct signer_slot *slot, char *err, size_t errlen);
    void (*stop)(struct extsigner_grpc *x);
};

/* The module's entry, EXTSIGNER_MODULE_ENTRY: its table, static. */
const struct extsigner_module *oidc_extsigner_module(void);

#endif
