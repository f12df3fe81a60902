/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ecdsa_raw: ECDSA signatures made straight into JOSE's raw r || s.
 *
 * OpenSSL 3's EVP_PKEY_sign hands an ECDSA signature back DER-encoded, and
 * JOSE wants the two numbers side by side, so the EVP path encodes the
 * signature and jws.c decoded it again. ECDSA_do_sign returns the two
 * numbers themselves. It is deprecated in OpenSSL 3.0 (with the rest of
 * EC_KEY) but is the same signing routine the EVP path ends in, without
 * the provider dispatch and i2d_ECDSA_SIG, so an ES256 Sign call of the
 * external signer runs fewer instructions (counted with callgrind, whose
 * counts do not drift as timings do; docs/BENCHMARKS.md has the signer's
 * throughput). The deprecated calls stay in this file.
 */
#ifndef OIDC_ECDSA_RAW_H
#define OIDC_ECDSA_RAW_H

#include <stddef.h>
#include <openssl/evp.h>

/* priv's EC key (a new reference: ecdsa_raw_key_free it), or NULL when
 * priv is not an EC key. */
EC_KEY *ecdsa_raw_key(EVP_PKEY *priv);

void ecdsa_raw_key_free(EC_KEY *ec);

/* Signs the digest md (mdlen bytes) with ec into raw: r then s, each
 * left-padded to coord_len bytes (raw holds 2 * coord_len). 0, or -1 with
 * OpenSSL's error queue cleared. Safe to call from many threads on one
 * key. */
int ecdsa_raw_sign(EC_KEY *ec, const unsigned char *md, size_t mdlen, unsigned char *raw, size_t coord_len);

#endif
