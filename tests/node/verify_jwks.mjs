// SPDX-License-Identifier: Apache-2.0
// A relying party nobody in this project wrote: panva/jose.
//
// usage: node verify_jwks.mjs <jwks_url> <issuer> <alg> <private_key_pem_path> <kid>
//
// Imports the PKCS#8 private key, signs a JWT with protected header {alg, kid}
// (iss=<issuer>, aud="test-aud", sub, iat, exp=+10 min), then verifies it
// against the JWKS fetched from <jwks_url> with createRemoteJWKSet + jwtVerify.
// Prints "OK <kid>" and exits 0 when verification succeeds; prints
// "FAIL <error code>: <message>" and exits 1 otherwise.
//
// The negative case needs no flag: pass a private key whose public key is not
// in the JWKS (with its own kid, or with the kid of a published key) and the
// verification must fail with exit status 1.
//
// Exit status 2 means bad usage or an unreadable key file (not a verdict).

import { readFile } from 'node:fs/promises';
import { SignJWT, importPKCS8, createRemoteJWKSet, jwtVerify } from 'jose';
import { failure, runCheck } from './verdict.mjs';

const AUDIENCE = 'test-aud';

async function main(argv) {
  if (argv.length !== 5) {
    console.error('usage: node verify_jwks.mjs <jwks_url> <issuer> <alg> <private_key_pem_path> <kid>');
    return 2;
  }
  const [jwksUrl, issuer, alg, keyPath, kid] = argv;

  let privateKey;
  try {
    const pem = await readFile(keyPath, 'utf8');
    privateKey = await importPKCS8(pem, alg);
  } catch (err) {
    console.error(`cannot import ${keyPath} as a PKCS#8 ${alg} key: ${err && err.message}`);
    return 2;
  }

  const token = await new SignJWT({})
    .setProtectedHeader({ alg, kid })
    .setIssuer(issuer)
    .setAudience(AUDIENCE)
    .setSubject('system:serviceaccount:default:e2e')
    .setIssuedAt()
    .setExpirationTime('10m')
    .sign(privateKey);

  const JWKS = createRemoteJWKSet(new URL(jwksUrl), { timeoutDuration: 5000, cooldownDuration: 0 });
  try {
    const { payload, protectedHeader } = await jwtVerify(token, JWKS, {
      issuer,
      audience: AUDIENCE,
      algorithms: [alg],
    });
    if (protectedHeader.kid !== kid || payload.iss !== issuer) {
      console.log(`FAIL unexpected: verified header ${JSON.stringify(protectedHeader)} payload ${JSON.stringify(payload)}`);
      return 1;
    }
    console.log(`OK ${kid}`);
    return 0;
  } catch (err) {
    console.log(failure(err));
    return 1;
  }
}

runCheck(main);
