/* SPDX-License-Identifier: Apache-2.0 */
#include "cli/token_command.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "jose/token_mint.h"
#include "keys/keyfile.h"

int token_command(const struct config *cfg)
{
    char err[1024], *token = NULL;
    char *default_audience[1] = {cfg->mint_issuer};
    EVP_PKEY *key = keyfile_read_private(cfg->signing_key_file, err, sizeof(err));
    struct token_claims claims = {
        .issuer = cfg->mint_issuer,
        .audiences = cfg->audiences.count ? cfg->audiences.items : default_audience,
        .naudiences = cfg->audiences.count ? cfg->audiences.count : 1,
        .namespace_ = cfg->mint_namespace,
        .service_account = cfg->service_account,
        .service_account_uid = cfg->service_account_uid,
        .pod_name = cfg->pod_name,
        .pod_uid = cfg->pod_uid,
        .node_name = cfg->node_name,
        .node_uid = cfg->node_uid,
        .now = time(NULL),
        .duration = cfg->duration,
    };

    if (key != NULL)
        token = token_mint(key, &claims, err, sizeof(err));
    EVP_PKEY_free(key);
    if (token == NULL) {
        fprintf(stderr, "oidc-discovery token: %s\n", err);
        return 2;
    }
    printf("%s\n", token);
    free(token);
    return 0;
}
