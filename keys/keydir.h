/* SPDX-License-Identifier: Apache-2.0 */
/*
 * keydir: the signing key directory (--signing-key-dir) on disk, where the
 * keys this server generates, or imported, live:
 *
 *   DIR/               mode 0700, owned by the server's user (or root)
 *   DIR/rotation.json  mode 0600: each key's kid, public key (base64 DER),
 *                      type, role, ages and dates (keys/rotation.h), in
 *                      the order the keys were made; what every process
 *                      on the directory publishes and signs with
 *   DIR/key-KID.pem    mode 0600: each private key, PKCS#8 PEM
 *   DIR/.lock          flock'd by the one process that rotates
 *
 * Files are replaced atomically (util/file.h). A key file is written
 * before rotation.json names it and removed after rotation.json stops
 * naming it, so a reader never finds a named key missing unless someone
 * else removed it. Only the process holding the lock writes.
 *
 * rotation.json is read as input that can be wrong: a key whose kid is
 * not its public key's, two signing (or next) keys, an unknown role or a
 * negative age refuse the whole file rather than let a guess sign. Files
 * the directory should not hold are reported, never read as keys.
 */
#ifndef OIDC_KEYDIR_H
#define OIDC_KEYDIR_H

#include <stddef.h>
#include <time.h>
#include <openssl/evp.h>

#include "keys/keyset.h"
#include "keys/rotation.h"

#define KEYDIR_STATE_FILE "rotation.json"
#define KEYDIR_LOCK_FILE  ".lock"

/* The public half of one key of the directory. */
struct keydir_pub {
    char *type;   /* "rsa-2048", "rsa-3072", "ec-p256" (or what an imported key is: "rsa-4096", "ec-p384") */
    char *spki;   /* base64 of the DER SubjectPublicKeyInfo, as stored */
    EVP_PKEY *pk; /* decoded from spki, owned */
};

/* The keys of rotation.json: rot[i] and pub[i] describe one key. */
struct keydir {
    struct rotation_key *rot;
    struct keydir_pub *pub;
    size_t count, cap;
};

/* The key types --signing-key-type names, NULL-terminated; the first is
 * the default. */
extern const char *const keydir_types[];

/* Opens the directory, creating it with mode 0700 first when create is
 * set and it is missing, and checks it as a directory of this server's
 * own (keys/keyfile.h: owned by this user or root) that holds private
 * keys: no access at all for group or others (0700). Returns the
 * descriptor, or -1 with the reason in err. */
int keydir_open(const char *dir, int create, char *err, size_t errlen);

/* Checks the directory (as keydir_open) and every key file in it (each
 * key-*.pem, named in rotation.json or not): a private key file that
 * group or others may access at all (not 0600) is refused, naming it.
 * 0, or -1 with the reason in err. */
int keydir_check_modes(const char *dir, char *err, size_t errlen);

/* Takes the rotation lock without waiting: 1 when this process holds it
 * now (*lockfd keeps it; closing it releases it), 0 when another process
 * does, -1 with the reason in err. */
int keydir_lock(const char *dir, int *lockfd, char *err, size_t errlen);

/* Reads rotation.json into a new *out: 0 when read, 1 when there is none
 * (*out is empty), -1 with the reason, naming the file, in err. */
int keydir_read(const char *dir, struct keydir **out, char *err, size_t errlen);

/* rotation.json's text for kd (what keydir_save writes), in a new
 * buffer (free it); 0, or -1 when out of memory. For a store that keeps
 * the directory's state elsewhere (etcd). */
int keydir_render_text(const struct keydir *kd, char **out, size_t *len);

/* Reads rotation.json's text (from elsewhere; name says where, for
 * messages) into a new *out, as keydir_read does. 0, or -1 with err. */
int keydir_parse_text(const char *name, const char *text, size_t len, struct keydir **out, char *err, size_t errlen);

/* The bytes of kid's key file as stored (PKCS#8 PEM), to seal for etcd;
 * free with file_free. NULL with the reason in err. */
char *keydir_key_pem(const char *dir, const char *kid, size_t *len, char *err, size_t errlen);

/* Writes kid's key file from the PEM text pem (from etcd), checking that
 * it holds kid's private key. 0, or -1 with the reason in err. */
int keydir_install_key(const char *dir, const char *kid, const char *pem, size_t len, char *err, size_t errlen);

/* Writes kd to rotation.json. 0, or -1 with the reason in err. */
int keydir_save(const char *dir, const struct keydir *kd, char *err, size_t errlen);

/* Generates a key of type (one of keydir_types), writes it to the
 * directory and appends it to kd with role and trusted, created now (not
 * saved). Returns its index, or -1 with the reason in err. */
int keydir_generate(const char *dir, struct keydir *kd, const char *type, enum rotation_role role, int trusted,
                    time_t now, char *err, size_t errlen);

/* Copies the first private key of the PEM file path (PKCS#1, PKCS#8 or
 * SEC1, as kube-apiserver's sa.key) into the directory and appends it to
 * kd as a trusted signing key created now. Returns its index, or -1 with
 * the reason in err (no private key, a type that cannot sign tokens). */
int keydir_import(const char *dir, struct keydir *kd, const char *path, time_t now, char *err, size_t errlen);

/* Removes key i from kd, writing its kid into kid; once rotation.json no
 * longer names it, keydir_remove_file deletes its file. */
void keydir_forget(struct keydir *kd, size_t i, char kid[KEY_KID_LEN + 1]);
int keydir_remove_file(const char *dir, const char *kid, char *err, size_t errlen);

/* Reads the private key of kid from the directory, checking that it is
 * the key kid names. NULL with the reason in err. */
EVP_PKEY *keydir_load_private(const char *dir, const char *kid, char *err, size_t errlen);

/* Adds the public key of every key of kd to ks, in kd's order, with the
 * key file as the source; a key already in ks (sa.key imported while
 * sa.pub is still a --service-account-key-file) is left as it is. 0, or
 * -1 with the reason in err. */
int keydir_add_public(const char *dir, const struct keydir *kd, struct keyset *ks, char *err, size_t errlen);

/* Reports through warn each entry of the directory that is none of its
 * files (rotation.json, .lock, the key file of a key of kd, a temporary
 * file of an atomic write): it is neither published nor used. */
void keydir_report_foreign(const char *dir, const struct keydir *kd, keyset_warn_cb warn, void *warn_ctx);

/* The index of kid in kd, or -1. */
int keydir_find(const struct keydir *kd, const char *kid);

/* A key's role in the directory, as `keys` and the admin listener's
 * status page show it. */
struct keydir_role {
    const char *name; /* rotation_role_name, or NULL: not a key of the directory */
    char until[32];   /* retired: RFC 3339 of when it leaves the published set at the earliest; else "" */
    char text[72];    /* "next", "signing", "retired until <until>"; "" when name is NULL */
};

/* The role of kid in kd (NULL: no directory) under the policy p, its
 * retired time read at now (rotation_until). */
void keydir_role_of(const struct keydir *kd, const char *kid, const struct rotation_policy *p, time_t now,
                    struct keydir_role *out);

/* A new empty key list; NULL when out of memory. */
struct keydir *keydir_new(void);

void keydir_free(struct keydir *kd);

#endif
