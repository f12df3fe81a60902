/* SPDX-License-Identifier: Apache-2.0 */
#include "server/tls/tls.h"

#include <h2o.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "keys/keyfile.h"
#include "util/file.h"

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

/* After reading PEM certificates until none is left: true when the end of
 * the input was all that stopped the reading (PEM's "no start line", which
 * is cleared), false on any other error. */
static int tls_pem_ended(void)
{
    unsigned long e = ERR_peek_last_error();

    if (ERR_GET_LIB(e) == ERR_LIB_PEM && ERR_GET_REASON(e) == PEM_R_NO_START_LINE)
        ERR_clear_error();
    else if (e != 0)
        return 0;
    return 1;
}

/* The chain as SSL_CTX_use_certificate_chain_file reads it (the leaf,
 * then every further certificate, the end of input showing as PEM's "no
 * start line"), but from bytes file_read took: OpenSSL's function opens
 * the path itself, which blocks on a FIFO, and would read bytes other than
 * those the change digest covers. Returns 1 or 0. */
static int tls_use_chain(SSL_CTX *ctx, const char *pem, size_t len)
{
    BIO *bio = BIO_new_mem_buf(pem, (int)len);
    X509 *leaf = bio ? PEM_read_bio_X509_AUX(bio, NULL, keyfile_no_password, NULL) : NULL;
    X509 *ca;
    int ok = leaf != NULL && SSL_CTX_use_certificate(ctx, leaf) == 1 && SSL_CTX_clear_chain_certs(ctx) == 1;

    while (ok && (ca = PEM_read_bio_X509(bio, NULL, keyfile_no_password, NULL)) != NULL) {
        if (SSL_CTX_add0_chain_cert(ctx, ca) != 1) {
            X509_free(ca);
            ok = 0;
        }
    }
    ok = ok && tls_pem_ended();
    X509_free(leaf);
    BIO_free(bio);
    return ok;
}

static int tls_use_key(SSL_CTX *ctx, const char *pem, size_t len)
{
    BIO *bio = BIO_new_mem_buf(pem, (int)len);
    EVP_PKEY *key = bio ? PEM_read_bio_PrivateKey(bio, NULL, keyfile_no_password, NULL) : NULL;
    int ok = key != NULL && SSL_CTX_use_PrivateKey(ctx, key) == 1;

    EVP_PKEY_free(key);
    BIO_free(bio);
    return ok;
}

/* Whether cert is within its validity period at now, compared as the
 * handshake's verification compares (expired from notAfter's second on). */
static int tls_cert_current(X509 *cert, time_t now)
{
    return X509_cmp_time(X509_get0_notBefore(cert), &now) < 0 && X509_cmp_time(X509_get0_notAfter(cert), &now) > 0;
}

/* A session ticket is taken only while the client certificate of its
 * session is valid: OpenSSL checks the session's own lifetime only, so a
 * certificate expiring within it would go on authenticating, resumption
 * after resumption, each handing out a new ticket (Go's TLS, which
 * kube-apiserver uses, refuses to resume then, as here). Refused, the
 * ticket costs a full handshake, whose verification the certificate
 * fails. IGNORE_RENEW, unlike IGNORE, leaves no way back to a session ID
 * lookup in TLS 1.2. Anything but a decrypted ticket keeps OpenSSL's
 * default (no resumption, a new ticket after the handshake). */
static SSL_TICKET_RETURN tls_ticket_check(SSL *ssl, SSL_SESSION *sess, const unsigned char *keyname, size_t keyname_len,
                                          SSL_TICKET_STATUS status, void *arg)
{
    X509 *peer;

    (void)ssl;
    (void)keyname;
    (void)keyname_len;
    (void)arg;
    if (status != SSL_TICKET_SUCCESS && status != SSL_TICKET_SUCCESS_RENEW)
        return SSL_TICKET_RETURN_IGNORE_RENEW;
    if ((peer = SSL_SESSION_get0_peer(sess)) != NULL && !tls_cert_current(peer, time(NULL)))
        return SSL_TICKET_RETURN_IGNORE_RENEW;
    return status == SSL_TICKET_SUCCESS ? SSL_TICKET_RETURN_USE : SSL_TICKET_RETURN_USE_RENEW;
}

/* Client certificates for ctx: each certificate of the PEM bytes is a
 * trust anchor and is named in the CertificateRequest (a client with
 * several certificates picks by those names). A client that sends none is
 * let through, to authenticate another way. OpenSSL refuses to resume a
 * session of a context that verifies peers and has no session id context,
 * failing the handshake, hence the one set here. Sessions are resumed by
 * ticket only, each ticket checked by tls_ticket_check: the session ID
 * cache (TLS 1.2) would resume without asking. Tickets of an earlier
 * context never decrypt here (SSL_CTX_new draws each context's ticket keys
 * at random), so a client CA reload, which builds a new context, ends
 * every session made under the old CA. Returns 1, or 0 (no certificate in
 * the bytes, or an OpenSSL error). */
static int tls_use_client_ca(SSL_CTX *ctx, const char *pem, size_t len)
{
    static const unsigned char sid_ctx[] = "oidc-discovery client CA";
    BIO *bio = BIO_new_mem_buf(pem, (int)len);
    X509_STORE *store = SSL_CTX_get_cert_store(ctx);
    X509 *ca;
    size_t n = 0;
    int ok = bio != NULL;

    /* Every certificate of the file is an anchor, an intermediate CA too,
     * as in Go's tls.Config.ClientCAs (which kube-apiserver uses). */
    ok = ok && X509_STORE_set_flags(store, X509_V_FLAG_PARTIAL_CHAIN) == 1;
    while (ok && (ca = PEM_read_bio_X509(bio, NULL, keyfile_no_password, NULL)) != NULL) {
        ok = X509_STORE_add_cert(store, ca) == 1 && SSL_CTX_add_client_CA(ctx, ca) == 1;
        X509_free(ca);
        n++;
    }
    BIO_free(bio);
    if (!ok || !tls_pem_ended())
        return 0;
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    return n > 0 && SSL_CTX_set_session_id_context(ctx, sid_ctx, sizeof(sid_ctx) - 1) == 1 &&
           SSL_CTX_set_session_ticket_cb(ctx, NULL, tls_ticket_check, NULL) == 1;
}

SSL_CTX *tls_context_new(const struct tls_files *f, int http2, time_t *not_after, char *err, size_t errlen)
{
    const struct tls_paths *p = f->paths;
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());

    ERR_clear_error();
    if (ctx == NULL || SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
        SSL_CTX_set_cipher_list(ctx, TLS_CIPHERS_12) != 1) {
        snprintf(err, errlen, "cannot set up TLS: %s", tls_openssl_error());
        goto fail;
    }
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_COMPRESSION);
    if (!tls_use_chain(ctx, f->cert, f->cert_len)) {
        snprintf(err, errlen, "--%s %s: %s", p->cert_flag, p->cert_file, tls_openssl_error());
        goto fail;
    }
    if (!tls_use_key(ctx, f->key, f->key_len)) {
        snprintf(err, errlen, "--%s %s: %s", p->key_flag, p->key_file, tls_openssl_error());
        goto fail;
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        snprintf(err, errlen, "--%s %s does not match the certificate in --%s %s", p->key_flag, p->key_file,
                 p->cert_flag, p->cert_file);
        goto fail;
    }
    if (f->ca != NULL && !tls_use_client_ca(ctx, f->ca, f->ca_len)) {
        snprintf(err, errlen, "--%s %s: %s", p->ca_flag, p->ca_file,
                 ERR_peek_last_error() ? tls_openssl_error() : "no PEM certificate in it");
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

/* SHA-256 over the files' bytes, each preceded by its length, so that
 * moving bytes from one file to the next is a change. Returns 1 or 0. */
static int tls_digest(struct tls_files *f)
{
    const char *parts[] = {f->cert, f->key, f->ca};
    const size_t lens[] = {f->cert_len, f->key_len, f->ca_len};
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    int ok = md != NULL && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1;

    for (size_t i = 0; ok && i < sizeof(parts) / sizeof(parts[0]); i++) {
        uint64_t n = lens[i];
        ok = EVP_DigestUpdate(md, &n, sizeof(n)) == 1 && (n == 0 || EVP_DigestUpdate(md, parts[i], lens[i]) == 1);
    }
    ok = ok && EVP_DigestFinal_ex(md, f->digest, NULL) == 1;
    EVP_MD_CTX_free(md);
    return ok;
}

int tls_files_read(const struct tls_paths *p, struct tls_files *f, char *err, size_t errlen)
{
    struct stat st;
    char why[1024];
    int rc = -1;

    memset(f, 0, sizeof(*f));
    f->paths = p;
    if ((f->cert = file_read(p->cert_file, TLS_MAX_FILE_SIZE, &f->cert_len, NULL, why, sizeof(why))) == NULL) {
        snprintf(err, errlen, "--%s %s", p->cert_flag, why);
    } else if ((f->key = file_read(p->key_file, TLS_MAX_FILE_SIZE, &f->key_len, &st, why, sizeof(why))) == NULL) {
        snprintf(err, errlen, "--%s %s", p->key_flag, why);
    } else if (p->ca_file != NULL &&
               (f->ca = file_read(p->ca_file, TLS_MAX_FILE_SIZE, &f->ca_len, NULL, why, sizeof(why))) == NULL) {
        snprintf(err, errlen, "--%s %s", p->ca_flag, why);
    } else if (!tls_digest(f)) {
        snprintf(err, errlen, "cannot digest the TLS files: out of memory");
    } else {
        keyfile_private_mode_warning(p->key_file, &st, f->key_warning, sizeof(f->key_warning));
        rc = 0;
    }
    if (rc != 0)
        tls_files_free(f);
    return rc;
}

void tls_files_free(struct tls_files *f)
{
    free(f->cert);
    free(f->ca);
    file_free(f->key, f->key_len);
    f->cert = f->key = f->ca = NULL;
}

/* h2o 2.2.5 keeps a connection's TLS state in a struct of its own
 * (struct st_h2o_socket_ssl_t, lib/common/socket.c) and offers no function
 * that returns the SSL object of a connection; that struct begins with
 * these two members. Debian ships h2o 2.2.5 and the build takes no other.
 * The context member is compared with the one the connection was accepted
 * with before the SSL object is touched, so another layout reads as "no
 * client certificate", never as a wild pointer. */
struct tls_h2o_ssl_head {
    SSL_CTX *ssl_ctx;
    SSL *ossl;
};

/* Whether leaf, with the chain its client sent, verifies at now against
 * the client CA of ctx, as a handshake with ctx would verify it. */
static int tls_verify_again(SSL_CTX *ctx, SSL *ssl, X509 *leaf, time_t now)
{
    X509_STORE_CTX *v = X509_STORE_CTX_new();
    X509_VERIFY_PARAM *param;
    int ok = v != NULL &&
             X509_STORE_CTX_init(v, SSL_CTX_get_cert_store(ctx), leaf, SSL_get_peer_cert_chain(ssl)) == 1 &&
             X509_STORE_CTX_set_default(v, "ssl_client") == 1;

    if (ok) {
        param = X509_STORE_CTX_get0_param(v);
        X509_VERIFY_PARAM_set_auth_level(param, SSL_CTX_get_security_level(ctx));
        ok = X509_VERIFY_PARAM_set1(param, SSL_CTX_get0_param(ctx)) == 1;
        X509_VERIFY_PARAM_set_time(param, now);
        ok = ok && X509_verify_cert(v) == 1;
    }
    X509_STORE_CTX_free(v);
    ERR_clear_error();
    return ok;
}

/* The handshake verified the certificate once, but a connection (and a
 * session, within tls_ticket_check's limit) lasts: each request checks
 * again that the certificate has not expired since, and that the client
 * CA it verified against is still the one served, as kube-apiserver's
 * x509 authenticator verifies each request's chain against its current CA
 * bundle. */
X509 *tls_client_certificate(struct st_h2o_socket_t *sock, SSL_CTX *accepted, SSL_CTX *current, time_t now,
                             struct tls_recheck *rc)
{
    const struct tls_h2o_ssl_head *head = (const void *)sock->ssl;
    X509 *cert;

    if (head == NULL || accepted == NULL || head->ssl_ctx != accepted || head->ossl == NULL ||
        SSL_get_SSL_CTX(head->ossl) != accepted || SSL_get_verify_result(head->ossl) != X509_V_OK ||
        (cert = SSL_get0_peer_certificate(head->ossl)) == NULL || !tls_cert_current(cert, now))
        return NULL;
    if (current == NULL || current == accepted)
        return cert;
    if (rc->ctx != current && SSL_CTX_up_ref(current)) {
        SSL_CTX_free(rc->ctx);
        rc->ctx = current;
        rc->ok = tls_verify_again(current, head->ossl, cert, now);
    }
    return rc->ctx == current && rc->ok ? cert : NULL;
}

void tls_recheck_clear(struct tls_recheck *rc)
{
    SSL_CTX_free(rc->ctx);
    rc->ctx = NULL;
    rc->ok = 0;
}

int tls_handshake_done(struct st_h2o_socket_t *sock, SSL_CTX *ctx)
{
    const struct tls_h2o_ssl_head *head = (const void *)sock->ssl;

    return head != NULL && ctx != NULL && head->ssl_ctx == ctx && head->ossl != NULL &&
           SSL_get_SSL_CTX(head->ossl) == ctx && SSL_is_init_finished(head->ossl);
}

/* An empty subject prints as nothing, and a memory BIO that was never
 * written to has no buffer at all (NULL data): neither is a name. */
char *tls_subject(X509 *cert)
{
    const X509_NAME *name = X509_get_subject_name(cert);
    BIO *bio = NULL;
    char *text = NULL, *out = NULL;
    long len = 0;

    if (name != NULL && X509_NAME_entry_count(name) > 0 && (bio = BIO_new(BIO_s_mem())) != NULL &&
        X509_NAME_print_ex(bio, name, 0, XN_FLAG_RFC2253) >= 0)
        len = BIO_get_mem_data(bio, &text);
    if (text != NULL && len > 0)
        out = strndup(text, (size_t)len);
    BIO_free(bio);
    ERR_clear_error();
    return out;
}
