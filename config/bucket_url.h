/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bucket_url: the forms of value that name object storage, for
 * --publish-to and publish --to (s3://BUCKET/PREFIX,
 * azblob://ACCOUNT/CONTAINER/PREFIX), --s3-endpoint and --azblob-endpoint
 * (a store's base URL) and --s3-region. Like checks.h, each check returns
 * NULL for a good value or a static string saying what is wrong; push/
 * splits the same values with config_split_bucket_url, so that what config
 * accepts is exactly what push/ can address.
 */
#ifndef OIDC_CONFIG_BUCKET_URL_H
#define OIDC_CONFIG_BUCKET_URL_H

#include <stddef.h>

enum config_bucket_kind { CONFIG_BUCKET_S3, CONFIG_BUCKET_AZBLOB };

/* The parts of a target, pointing into the value. */
struct config_bucket_url {
    enum config_bucket_kind kind;
    const char *bucket; /* the S3 bucket, or the Azure storage account */
    size_t bucket_len;
    const char *container; /* Azure only: the container ("$web" for a static website) */
    size_t container_len;
    const char *prefix; /* without leading or trailing "/"; may be empty */
    size_t prefix_len;
};

/* Splits s3://BUCKET[/PREFIX] or azblob://ACCOUNT/CONTAINER[/PREFIX] (a
 * trailing "/" is allowed) into *out. The names follow the stores' rules
 * (S3: 3 to 63 of a-z, 0-9, '.', '-'; Azure: an account of 3 to 24 of a-z
 * and 0-9, a container of 3 to 63 of a-z, 0-9 and '-', or "$web"); PREFIX
 * is made of segments of A-Z, a-z, 0-9, '.', '_', '~' and '-' (none "."
 * or ".."), so that an object name never needs percent-encoding, which
 * the signatures would then have to agree on. */
const char *config_split_bucket_url(const char *v, struct config_bucket_url *out);

/* The row check of --publish-to and --to. */
const char *config_check_bucket_url(const char *v, int allow_http);

/* A store's base URL: http or https, a host and an optional port, no path,
 * query or fragment. http is accepted (for local stores) whatever
 * --allow-insecure-issuer says; config warns about it. */
const char *config_check_endpoint(const char *v, int allow_http);

/* A region for SigV4: 1 to 64 of a-z, 0-9 and '-' ("eu-west-1", "auto"). */
const char *config_check_region(const char *v, int allow_http);

#endif
