/*
 * module: the entry of oidc-discovery-extsigner.so (module.h), the only
 * symbol it exports.
 */
#include "server/extsigner/module.h"

#include "build_info.h" /* generated: OIDC_BUILD_COMMIT, OIDC_BUILD_DATE */
#include "server/extsigner/grpc_server.h"

__attribute__((visibility("default"))) const struct extsigner_module *oidc_extsigner_module(void)
{
    static const struct extsigner_module module = {
        .build = EXTSIGNER_MODULE_BUILD,
        .start = extsigner_grpc_start,
        .stop = extsigner_grpc_stop,
    };
    return &module;
}
