/* SPDX-License-Identifier: Apache-2.0 */
/*
 * seal: private keys sealed for a store that others can read (the
 * cluster's etcd, where every control-plane node's signer keeps the key
 * set). AES-256-GCM under the key of --signing-key-encryption-key-file
 * (32 random bytes written as 64 hex characters, `openssl rand -hex 32`),
 * with the kid and the store's name for the value (the etcd key) as
 * associated data: a sealed key copied under another name, or given
 * another kid, does not open.
 *
 * A sealed value is
 *
 *   "ODS1" | nonce (12 random bytes) | ciphertext | tag (16 bytes)
 *
 * The version prefix lets a later format be told apart; a value that is
 * not this format, is cut short, was changed, or was sealed under another
 * key is refused as one thing ("does not open"): nothing tells an
 * attacker which. The plain text (a PKCS#8 PEM) is wiped when freed.
 */
#ifndef OIDC_SEAL_H
#define OIDC_SEAL_H

#include <stddef.h>

#define SEAL_KEY_LEN   32
#define SEAL_NONCE_LEN 12
#define SEAL_TAG_LEN   16
#define SEAL_MAGIC     "ODS1"
#define SEAL_MAGIC_LEN 4

/* The bytes a sealed value adds to its plain text. */
#define SEAL_OVERHEAD (SEAL_MAGIC_LEN + SEAL_NONCE_LEN + SEAL_TAG_LEN)

/* A sealed value larger than this is refused unread (a PKCS#8 RSA-4096
 * key is some 3.3 KB). */
#define SEAL_MAX (64 * 1024)

struct seal_key {
    unsigned char k[SEAL_KEY_LEN];
};

/* Reads the key file path, which flag names in messages: exactly 64 hex
 * characters (surrounding whitespace allowed), in a regular file that
 * group and others may not access at all (0600 or stricter). 0, or -1
 * with the reason, naming flag and path, in err; nothing of the file's
 * contents is ever in err. */
int seal_key_read(const char *flag, const char *path, struct seal_key *key, char *err, size_t errlen);

/* Wipes the key. */
void seal_key_wipe(struct seal_key *key);

/* Seals len bytes of plain for the value named name holding kid's key.
 * Returns a new buffer (*outlen bytes: len + SEAL_OVERHEAD; free it with
 * free), or NULL with the reason in err. */
unsigned char *seal_value(const struct seal_key *key, const char *kid, const char *name, const void *plain, size_t len,
                          size_t *outlen, char *err, size_t errlen);

/* Opens what seal_value made for the same kid and name under the same
 * key. Returns the plain text, NUL-terminated after *outlen bytes (free it
 * with seal_free, which wipes it), or NULL with "<name> does not open
 * (...)" in err. */
char *seal_open(const struct seal_key *key, const char *kid, const char *name, const void *sealed, size_t len,
                size_t *outlen, char *err, size_t errlen);

/* Wipes and frees what seal_open returned; NULL is fine. */
void seal_free(char *plain, size_t len);

#endif
