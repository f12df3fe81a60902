/* SPDX-License-Identifier: Apache-2.0 */
#include "keys/seal.h"

#include <ctype.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/file.h"

/* The key file holds 64 hex characters and a newline or so; anything much
 * larger is not a key file. */
#define SEAL_KEY_FILE_MAX 256

static int hex_value(int c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* Whoever reads this file and the store has every private key: a file
 * that group or others may read (or write: swap in a key they know) is
 * refused, since such a leak would never show. */
int seal_key_read(const char *flag, const char *path, struct seal_key *key, char *err, size_t errlen)
{
    struct stat st;
    char ferr[512];
    size_t len = 0, start = 0, end, n = 0;
    char *text = file_read(path, SEAL_KEY_FILE_MAX, &len, &st, ferr, sizeof(ferr));
    int rc = -1;

    if (text == NULL) {
        snprintf(err, errlen, "--%s: %s", flag, ferr);
        return -1;
    }
    if ((st.st_mode & 077) != 0) {
        snprintf(err, errlen, "--%s %s: mode %04o lets group or others access the encryption key; chmod 600 it", flag,
                 path, (unsigned)(st.st_mode & 07777));
        goto out;
    }
    while (start < len && isspace((unsigned char)text[start]))
        start++;
    end = len;
    while (end > start && isspace((unsigned char)text[end - 1]))
        end--;
    if (end - start != 2 * SEAL_KEY_LEN) {
        snprintf(err, errlen,
                 "--%s %s: not an encryption key: it must hold 64 hex characters (32 random bytes, `openssl rand "
                 "-hex 32`), it holds %zu characters",
                 flag, path, end - start);
        goto out;
    }
    for (n = 0; n < SEAL_KEY_LEN; n++) {
        int hi = hex_value((unsigned char)text[start + 2 * n]), lo = hex_value((unsigned char)text[start + 2 * n + 1]);
        if (hi < 0 || lo < 0) {
            snprintf(err, errlen,
                     "--%s %s: not an encryption key: it must hold 64 hex characters (`openssl rand -hex 32`)", flag,
                     path);
            goto out;
        }
        key->k[n] = (unsigned char)(hi << 4 | lo);
    }
    rc = 0;
out:
    if (rc != 0)
        seal_key_wipe(key);
    file_free(text, len);
    return rc;
}

void seal_key_wipe(struct seal_key *key)
{
    OPENSSL_cleanse(key->k, sizeof(key->k));
}

/* Feeds the associated data: the kid and the value's name, each with its
 * terminating NUL so that ("ab", "c") and ("a", "bc") differ. */
static int seal_aad(EVP_CIPHER_CTX *ctx, const char *kid, const char *name)
{
    int n;

    return EVP_CipherUpdate(ctx, NULL, &n, (const unsigned char *)kid, (int)strlen(kid) + 1) == 1 &&
           EVP_CipherUpdate(ctx, NULL, &n, (const unsigned char *)name, (int)strlen(name) + 1) == 1;
}

unsigned char *seal_value(const struct seal_key *key, const char *kid, const char *name, const void *plain, size_t len,
                          size_t *outlen, char *err, size_t errlen)
{
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    unsigned char *out = len <= SEAL_MAX ? malloc(len + SEAL_OVERHEAD) : NULL, *nonce, *ct;
    int n = 0, fin = 0, ok;

    if (ctx == NULL || out == NULL) {
        snprintf(err, errlen, "%s: cannot seal kid=%s: %s", name, kid, out == NULL ? "too large" : "out of memory");
        EVP_CIPHER_CTX_free(ctx);
        free(out);
        return NULL;
    }
    memcpy(out, SEAL_MAGIC, SEAL_MAGIC_LEN);
    nonce = out + SEAL_MAGIC_LEN;
    ct = nonce + SEAL_NONCE_LEN;
    ok = RAND_bytes(nonce, SEAL_NONCE_LEN) == 1 &&
         EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, key->k, nonce) == 1 && seal_aad(ctx, kid, name) &&
         EVP_EncryptUpdate(ctx, ct, &n, plain, (int)len) == 1 && EVP_EncryptFinal_ex(ctx, ct + n, &fin) == 1 &&
         (size_t)(n + fin) == len && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, SEAL_TAG_LEN, ct + len) == 1;
    EVP_CIPHER_CTX_free(ctx);
    if (!ok) {
        snprintf(err, errlen, "%s: cannot seal kid=%s (OpenSSL)", name, kid);
        free(out);
        return NULL;
    }
    *outlen = len + SEAL_OVERHEAD;
    return out;
}

char *seal_open(const struct seal_key *key, const char *kid, const char *name, const void *sealed, size_t len,
                size_t *outlen, char *err, size_t errlen)
{
    const unsigned char *in = sealed, *nonce = in + SEAL_MAGIC_LEN, *ct = nonce + SEAL_NONCE_LEN;
    size_t ctlen = len >= SEAL_OVERHEAD ? len - SEAL_OVERHEAD : 0;
    EVP_CIPHER_CTX *ctx = NULL;
    char *plain = NULL;
    int n = 0, fin = 0, ok = 0;

    if (len < SEAL_OVERHEAD || len > SEAL_MAX || memcmp(in, SEAL_MAGIC, SEAL_MAGIC_LEN) != 0) {
        snprintf(err, errlen, "%s does not open: not a sealed key (%zu bytes)", name, len);
        return NULL;
    }
    if ((ctx = EVP_CIPHER_CTX_new()) != NULL && (plain = malloc(ctlen + 1)) != NULL)
        ok = EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, key->k, nonce) == 1 && seal_aad(ctx, kid, name) &&
             EVP_DecryptUpdate(ctx, (unsigned char *)plain, &n, ct, (int)ctlen) == 1 &&
             EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, SEAL_TAG_LEN, (void *)(ct + ctlen)) == 1 &&
             EVP_DecryptFinal_ex(ctx, (unsigned char *)plain + n, &fin) == 1 && (size_t)(n + fin) == ctlen;
    EVP_CIPHER_CTX_free(ctx);
    if (!ok) {
        snprintf(err, errlen,
                 "%s does not open for kid=%s: sealed under another --signing-key-encryption-key-file, changed, or "
                 "cut short",
                 name, kid);
        seal_free(plain, ctlen);
        return NULL;
    }
    plain[ctlen] = '\0';
    *outlen = ctlen;
    return plain;
}

void seal_free(char *plain, size_t len)
{
    if (plain == NULL)
        return;
    OPENSSL_cleanse(plain, len + 1);
    free(plain);
}
