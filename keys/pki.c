/* SPDX-License-Identifier: Apache-2.0 */
#include "keys/pki.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "keys/pem.h"
#include "util/file.h"

/* One CA certificate's public key and the file it is in. */
struct pki_ca {
    EVP_PKEY *pub;
    char *path;
};

struct pki_cas {
    char *dir;
    struct pki_ca *cas;
    size_t count, cap;
    int failed; /* out of memory: a CA may be missing */
};

/* Whether name (len bytes) ends in suffix, any case. */
static int pki_ends_with(const char *name, size_t len, const char *suffix)
{
    size_t n = strlen(suffix);

    return len >= n && strncasecmp(name + len - n, suffix, n) == 0;
}

/* Takes off the first of suffixes that name (*len bytes) ends in, and
 * says whether one did. */
static int pki_strip(const char *name, size_t *len, const char *const *suffixes)
{
    for (size_t i = 0; suffixes[i] != NULL; i++) {
        if (pki_ends_with(name, *len, suffixes[i]) && *len > strlen(suffixes[i])) {
            *len -= strlen(suffixes[i]);
            return 1;
        }
    }
    return 0;
}

/* kubeadm: ca.*, front-proxy-ca.*, etcd/ca.*; k3s: server-ca.*,
 * client-ca.*, request-header-ca.*; cfssl: ca.pem, ca-key.pem; others
 * (kubernetes-ca.pem, etcd-ca-key.pem, root_ca.crt) follow the pattern. */
int pki_ca_named(const char *name)
{
    static const char *const extensions[] = {".crt", ".cert", ".cer", ".key", ".pem", ".der", ".pub", NULL};
    static const char *const roles[] = {"-key", "_key", "-cert", "_cert", "-crt", NULL};
    size_t len = strlen(name);

    while (pki_strip(name, &len, extensions))
        ;
    pki_strip(name, &len, roles);
    return (len == 2 && strncasecmp(name, "ca", 2) == 0) || pki_ends_with(name, len, "-ca") ||
           pki_ends_with(name, len, "_ca");
}

/* pem_key_cb for pki_cas_read: keeps one CA certificate's key. */
static int pki_take(void *ctx, EVP_PKEY *pub, const char *path, int block, int was_private, char *err, size_t errlen)
{
    struct pki_cas *c = ctx;
    size_t cap = c->cap ? c->cap * 2 : 4;
    struct pki_ca *cas = c->count < c->cap ? c->cas : realloc(c->cas, cap * sizeof(*cas));

    (void)block, (void)was_private;
    if (cas != NULL && cas != c->cas) {
        c->cas = cas;
        c->cap = cap;
    }
    if (cas == NULL || (c->cas[c->count].path = strdup(path)) == NULL) {
        EVP_PKEY_free(pub);
        snprintf(err, errlen, "out of memory");
        c->failed = 1;
        return -1;
    }
    c->cas[c->count++].pub = pub;
    return 0;
}

/* Reads the CA certificates of one file into c. Only a text with a
 * certificate in it is parsed (each block's DER wiped once looked at):
 * the private key files beside it (ca.key, apiserver.key) are read and
 * wiped, never decoded. */
static void pki_read_file(struct pki_cas *c, const char *path)
{
    static const char marker[] = "-----BEGIN CERTIFICATE-----";
    char err[256];
    size_t len = 0;
    char *text = file_read(path, PEM_MAX_FILE_SIZE, &len, NULL, err, sizeof(err));

    if (text != NULL && memmem(text, len, marker, sizeof(marker) - 1) != NULL)
        pem_ca_keys(path, text, len, pki_take, c);
    file_free(text, len);
}

static int pki_visible(const struct dirent *e)
{
    return e->d_name[0] != '.';
}

struct pki_cas *pki_cas_read(const char *dir, const char *skip)
{
    struct pki_cas *c = calloc(1, sizeof(*c));
    struct dirent **names = NULL;
    char path[4096];
    int n;

    if (c == NULL || (c->dir = strdup(dir)) == NULL) {
        free(c);
        return NULL;
    }
    n = scandir(dir, &names, pki_visible, alphasort);
    for (int i = 0; i < n; i++) {
        if (!c->failed && i < PKI_MAX_FILES && (skip == NULL || strcmp(names[i]->d_name, skip) != 0) &&
            (size_t)snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name) < sizeof(path))
            pki_read_file(c, path);
        free(names[i]);
    }
    free(names);
    if (c->failed) {
        pki_cas_free(c);
        return NULL;
    }
    return c;
}

const char *pki_cas_dir(const struct pki_cas *c)
{
    return c->dir;
}

const char *pki_ca_of(const struct pki_cas *c, const EVP_PKEY *pub)
{
    for (size_t i = 0; i < c->count; i++)
        if (EVP_PKEY_eq(c->cas[i].pub, pub) == 1)
            return c->cas[i].path;
    return NULL;
}

void pki_cas_free(struct pki_cas *c)
{
    if (c == NULL)
        return;
    for (size_t i = 0; i < c->count; i++) {
        EVP_PKEY_free(c->cas[i].pub);
        free(c->cas[i].path);
    }
    free(c->cas);
    free(c->dir);
    free(c);
}
