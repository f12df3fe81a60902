/* SPDX-License-Identifier: Apache-2.0 */
/*
 * azblob: the Azure Blob Storage store, over util/http_client. Objects
 * are block blobs written with Put Blob (x-ms-blob-type: BlockBlob), their
 * Content-Type and Cache-Control set as x-ms-blob-content-type and
 * x-ms-blob-cache-control, our metadata as x-ms-meta-oidc_generation and
 * x-ms-meta-oidc_sha256 (Azure metadata names are C# identifiers: no '-').
 *
 * Addressing: https://ACCOUNT.blob.core.windows.net/CONTAINER/KEY, or with
 * --azblob-endpoint ENDPOINT/ACCOUNT/CONTAINER/KEY, the form Azurite takes.
 *
 * Authorization, one of: a SAS token read from --azblob-sas-file at every
 * request (so that a renewed token is picked up), appended as the query
 * string; or the account key, read from --azblob-key-file at every
 * request or from AZURE_STORAGE_KEY once, signing each request with
 * SharedKey (azsign.h).
 */
#ifndef OIDC_PUSH_AZBLOB_H
#define OIDC_PUSH_AZBLOB_H

#include <stdatomic.h>
#include <stddef.h>

#include "config/bucket_url.h"
#include "config/config.h"
#include "push/store.h"

/* The service version every request names. */
#define PUSH_AZBLOB_VERSION "2021-08-06"

/* Opens the Azure Blob target u; *ops and *store for push_sync. Returns 0,
 * or -1 with the reason in err (no credentials, out of memory). */
int push_azblob_open(const struct config *cfg, const struct config_bucket_url *u, const atomic_int *cancel,
                     const struct push_store_ops **ops, void **store, char *err, size_t errlen);

void push_azblob_close(void *store);

#endif
