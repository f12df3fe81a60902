/* SPDX-License-Identifier: Apache-2.0 */
/*
 * devkeys: the development key pair behind `oidc-discovery dev`, so that a
 * newcomer can run the server without a cluster. Never used by `serve`.
 */
#ifndef OIDC_DEVKEYS_H
#define OIDC_DEVKEYS_H

#include <stddef.h>

/* Makes sure dir holds sa.key (RSA 2048, PKCS#8, mode 0600) and sa.pub
 * (PKIX), generating both when sa.pub does not exist yet. Writes the path of
 * sa.pub into pub_path. Returns 1 when a pair was generated, 0 when one was
 * already there, -1 with a message in err. */
int devkeys_ensure(const char *dir, char *pub_path, size_t pub_path_len, char *err, size_t errlen);

#endif
