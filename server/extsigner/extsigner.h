/*
 * extsigner: kube-apiserver's external signer (--external-signer-listen)
 * as the server starts and stops it. The gRPC server itself
 * (grpc_server.h) is in the module oidc-discovery-extsigner.so, which this
 * loads only when the flag is given, so that a process that never signs
 * maps neither its code nor protobuf-c. (The module was made when the
 * transport was gRPC's C core, whose ~75 libraries cost every process
 * about 9 MiB and 9 ms of start-up; on nghttp2, which libcurl maps
 * anyway, it saves far less.)
 *
 * Where the module is looked for, in this order, the first file that
 * exists being the one loaded (a module that exists but does not load is
 * an error, never a reason to try an older one elsewhere):
 *   1. the directory of the running executable (/proc/self/exe): the
 *      build tree, where a binary must load its own build's module and
 *      never one installed from another version;
 *   2. <that directory>/../lib/oidc-discovery (the relative path from the
 *      install's bin to its lib directory): where `cmake --install` puts it,
 *      whatever --prefix or DESTDIR was used;
 *   3. the lib directory of the configured prefix, compiled in: for a
 *      binary copied out of its install.
 * All three are as trusted as the executable itself (whoever can write
 * next to it can replace it); never the current directory, never a path
 * from the environment (LD_LIBRARY_PATH, dlopen's own search), which an
 * attacker could set for a root service.
 */
#ifndef OIDC_EXTSIGNER_EXTSIGNER_H
#define OIDC_EXTSIGNER_EXTSIGNER_H

#include <stddef.h>

#include "config/config.h"
#include "jose/signer.h"

struct extsigner;

/* Loads the module (once per process) and starts its gRPC server on
 * --external-signer-listen, answering from slot (grpc_server.h). NULL with
 * the reason in err, which names the flag and, when the module is at
 * fault, every path tried. */
struct extsigner *extsigner_start(const struct config *cfg, struct signer_slot *slot, char *err, size_t errlen);

/* Stops the server started by extsigner_start (NULL: nothing). */
void extsigner_stop(struct extsigner *x);

#endif
