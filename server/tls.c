#include "server/tls.h"

#include <h2o.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "keys/keyfile.h"

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

/* Encrypted PEM is refused: OpenSSL's default would ask for a password on
 * the terminal, and a server has nobody there to answer. */
static int tls_no_password(char *buf, int size, int rwflag, void *u)
{
    (void)buf;
    (void)size;
    (void)rwflag;
    (void)u;
    return -1;
}

static time_t tls_not_after(SSL_CTX *ctx)
{
    X509 *leaf = SSL_CTX_get0_certificate(ctx);
    struct tm tm;

    if (leaf == NULL || ASN1_TIME_to_tm(X509_get0_notAfter(leaf), &tm) != 1)
        return 0;
    return timegm(&tm);
}

/* The chain as SSL_CTX_use_certificate_chain_file reads it (the leaf,
 * then every further certificate, the end of input showing as PEM's "no
 * start line"), but from bytes keyfile_read took: OpenSSL's function opens
 * the path itself, which blocks on a FIFO, and would read bytes other than
 * those the change digest covers. Returns 1 or 0. */
static int tls_use_chain(SSL_CTX *ctx, const char *pem, size_t len)
{
    BIO *bio = BIO_new_mem_buf(pem, (int)len);
    X509 *leaf = bio ? PEM_read_bio_X509_AUX(bio, NULL, tls_no_password, NULL) : NULL;
    X509 *ca;
    unsigned long e;
    int ok = leaf != NULL && SSL_CTX_use_certificate(ctx, leaf) == 1 && SSL_CTX_clear_chain_certs(ctx) == 1;

    while (ok && (ca = PEM_read_bio_X509(bio, NULL, tls_no_password, NULL)) != NULL) {
        if (SSL_CTX_add0_chain_cert(ctx, ca) != 1) {
            X509_free(ca);
            ok = 0;
        }
    }
    e = ERR_peek_last_error();
    if (ok && ERR_GET_LIB(e) == ERR_LIB_PEM && ERR_GET_REASON(e) == PEM_R_NO_START_LINE)
        ERR_clear_error();
    else if (e != 0)
        ok = 0;
    X509_free(leaf);
    BIO_free(bio);
    return ok;
}

static int tls_use_key(SSL_CTX *ctx, const char *pem, size_t len)
{
    BIO *bio = BIO_new_mem_buf(pem, (int)len);
    EVP_PKEY *key = bio ? PEM_read_bio_PrivateKey(bio, NULL, tls_no_password, NULL) : NULL;
    int ok = key != NULL && SSL_CTX_use_PrivateKey(ctx, key) == 1;

    EVP_PKEY_free(key);
    BIO_free(bio);
    return ok;
}

SSL_CTX *tls_context_new(const struct tls_files *f, int http2, time_t *not_after, char *err, size_t errlen)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());

    ERR_clear_error();
    if (ctx == NULL || SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
        SSL_CTX_set_cipher_list(ctx, TLS_CIPHERS_12) != 1) {
        snprintf(err, errlen, "cannot set up TLS: %s", tls_openssl_error());
        goto fail;
    }
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_COMPRESSION);
    if (!tls_use_chain(ctx, f->cert, f->cert_len)) {
        snprintf(err, errlen, "--tls-cert-file %s: %s", f->cert_file, tls_openssl_error());
        goto fail;
    }
    if (!tls_use_key(ctx, f->key, f->key_len)) {
        snprintf(err, errlen, "--tls-private-key-file %s: %s", f->key_file, tls_openssl_error());
        goto fail;
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        snprintf(err, errlen, "--tls-private-key-file %s does not match the certificate in --tls-cert-file %s",
                 f->key_file, f->cert_file);
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

/* Certificates and keys are a few KiB; a chain of a dozen certificates is
 * far below this. */
#define TLS_MAX_FILE_SIZE (1024 * 1024)

/* SHA-256 over the certificate's bytes, then the key's. Returns 1 or 0. */
static int tls_digest(struct tls_files *f)
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    int ok = md != NULL && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1 &&
             EVP_DigestUpdate(md, f->cert, f->cert_len) == 1 && EVP_DigestUpdate(md, f->key, f->key_len) == 1 &&
             EVP_DigestFinal_ex(md, f->digest, NULL) == 1;

    EVP_MD_CTX_free(md);
    return ok;
}

int tls_files_read(const char *cert_file, const char *key_file, struct tls_files *f, char *err, size_t errlen)
{
    struct stat st;
    char why[1024];
    int rc = -1;

    memset(f, 0, sizeof(*f));
    f->cert_file = cert_file;
    f->key_file = key_file;
    if ((f->cert = keyfile_read(cert_file, TLS_MAX_FILE_SIZE, &f->cert_len, NULL, why, sizeof(why))) == NULL) {
        snprintf(err, errlen, "--tls-cert-file %s", why);
    } else if ((f->key = keyfile_read(key_file, TLS_MAX_FILE_SIZE, &f->key_len, &st, why, sizeof(why))) == NULL) {
        snprintf(err, errlen, "--tls-private-key-file %s", why);
    } else if (!tls_digest(f)) {
        snprintf(err, errlen, "cannot digest the TLS files: out of memory");
    } else {
        keyfile_private_mode_warning(key_file, &st, f->key_warning, sizeof(f->key_warning));
        rc = 0;
    }
    if (rc != 0)
        tls_files_free(f);
    return rc;
}

void tls_files_free(struct tls_files *f)
{
    free(f->cert);
    keyfile_free(f->key, f->key_len);
    f->cert = f->key = NULL;
}
