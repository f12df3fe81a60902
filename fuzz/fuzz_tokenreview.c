/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: TokenReview request parsing (jose/tokenreview.c) and,
 * when it parses, rendering of both the authenticated and the refused
 * answer. No HTTP. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jose/tokenreview.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256];
    struct tokenreview_request req;
    struct token_user user;
    char *body;
    size_t len;

    if (tokenreview_parse((const char *)data, size, &req, err, sizeof(err)) != 0) {
        body = tokenreview_render_status(400, "BadRequest", err, &len);
        free(body);
        return 0;
    }
    body = tokenreview_render(&req, NULL, "service account token has expired", &len);
    free(body);

    /* An authenticated answer that echoes the request's token and audiences. */
    memset(&user, 0, sizeof(user));
    user.username = req.token;
    user.uid = "0f8e9d7c-1111-2222-3333-444455556666";
    user.groups[0] = "system:serviceaccounts";
    user.groups[1] = req.token;
    user.extra[0].key = "authentication.kubernetes.io/pod-name";
    user.extra[0].value = req.token;
    user.nextra = 1;
    user.audiences = req.audiences;
    user.naudiences = req.naudiences;
    user.exp = 1800000000;
    body = tokenreview_render(&req, &user, NULL, &len);
    free(body);
    tokenreview_request_clear(&req);
    return 0;
}
