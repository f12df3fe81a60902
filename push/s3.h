/* SPDX-License-Identifier: Apache-2.0 */
/*
 * s3: the S3 store (AWS, and S3-compatible stores such as GCS's XML API
 * with HMAC keys or MinIO), over util/http_client, each request signed
 * with AWS Signature Version 4 by libcurl (CURLOPT_AWS_SIGV4; see
 * docs/compatibility.md section 10).
 *
 * Addressing: virtual-hosted (https://BUCKET.s3.REGION.amazonaws.com/KEY)
 * without an endpoint, as AWS recommends; path-style (ENDPOINT/BUCKET/KEY)
 * with --s3-endpoint, which every S3-compatible store and emulator takes
 * and which needs no DNS name per bucket. Our metadata travels as
 * x-amz-meta-oidc-generation and x-amz-meta-oidc-sha256.
 *
 * Credentials: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and, for
 * temporary credentials, AWS_SESSION_TOKEN, read once when the target is
 * opened.
 */
#ifndef OIDC_PUSH_S3_H
#define OIDC_PUSH_S3_H

#include <stdatomic.h>
#include <stddef.h>

#include "config/bucket_url.h"
#include "config/config.h"
#include "push/store.h"

/* Opens the S3 target u; *ops and *store for push_sync. Returns 0, or -1
 * with the reason in err (credentials missing, out of memory). */
int push_s3_open(const struct config *cfg, const struct config_bucket_url *u, const atomic_int *cancel,
                 const struct push_store_ops **ops, void **store, char *err, size_t errlen);

void push_s3_close(void *store);

#endif
