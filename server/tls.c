#include "tls.h"

#include <h2o.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <string.h>

/* TLS 1.2 suites: ECDHE only (forward secrecy) and AEAD only. TLS 1.3
 * suites are all AEAD; OpenSSL's defaults are kept for them. */
#define TLS_CIPHERS_12                                                                                                 \
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"                         \
    "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"

/* ALPN in order of preference. h2o's own list names only the HTTP/2
 * variants, which leaves HTTP/1.1-only clients without a protocol. Without
 * --http2 h2 is not offered (docs/http2.md says why). */
static const h2o_iovec_t tls_alpn_h2[] = {{H2O_STRLIT("h2")}, {H2O_STRLIT("http/1.1")}, {NULL, 0}};
static const h2o_iovec_t tls_alpn_http1[] = {{H2O_STRLIT("http/1.1")}, {NULL, 0}};

/* The first OpenSSL error as text, for messages. */
static const char *tls_openssl_error(void)
{
    static __thread char buf[256];
    unsigned long e = ERR_peek_last_error();

    if (e == 0)
        return "unknown error";
    ERR_error_string_n(e, buf, sizeof(buf));
    return buf;
}

static time_t tls_not_after(SSL_CTX *ctx)
{
    X509 *leaf = SSL_CTX_get0_certificate(ctx);
    struct tm tm;

    if (leaf == NULL || ASN1_TIME_to_tm(X509_get0_notAfter(leaf), &tm) != 1)
        return 0;
    return timegm(&tm);
}

SSL_CTX *tls_context_new(const char *cert_file, const char *key_file, int http2, time_t *not_after, char *err,
                         size_t errlen)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());

    ERR_clear_error();
    if (ctx == NULL || SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
        SSL_CTX_set_cipher_list(ctx, TLS_CIPHERS_12) != 1) {
        snprintf(err, errlen, "cannot set up TLS: %s", tls_openssl_error());
        goto fail;
    }
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_COMPRESSION);
    if (SSL_CTX_use_certificate_chain_file(ctx, cert_file) != 1) {
        snprintf(err, errlen, "--tls-cert-file %s: %s", cert_file, tls_openssl_error());
        goto fail;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, key_file, SSL_FILETYPE_PEM) != 1) {
        snprintf(err, errlen, "--tls-private-key-file %s: %s", key_file, tls_openssl_error());
        goto fail;
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        snprintf(err, errlen, "--tls-private-key-file %s does not match the certificate in --tls-cert-file %s",
                 key_file, cert_file);
        goto fail;
    }
    h2o_ssl_register_alpn_protocols(ctx, http2 ? tls_alpn_h2 : tls_alpn_http1);
    *not_after = tls_not_after(ctx);
    ERR_clear_error();
    return ctx;

fail:
    ERR_clear_error();
    SSL_CTX_free(ctx);
    return NULL;
}

/* Feeds a whole file to the digest. */
static int tls_digest_file(EVP_MD_CTX *md, const char *path)
{
    unsigned char buf[8192];
    size_t n;
    FILE *f = fopen(path, "rb");

    if (f == NULL)
        return -1;
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
        EVP_DigestUpdate(md, buf, n);
    fclose(f);
    OPENSSL_cleanse(buf, sizeof(buf));
    return 0;
}

int tls_files_digest(const char *cert_file, const char *key_file, unsigned char digest[32])
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    int rc = -1;

    if (md != NULL && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1 && tls_digest_file(md, cert_file) == 0 &&
        tls_digest_file(md, key_file) == 0 && EVP_DigestFinal_ex(md, digest, NULL) == 1)
        rc = 0;
    EVP_MD_CTX_free(md);
    return rc;
}
