// SPDX-License-Identifier: Apache-2.0
// A signer nobody in this project wrote: panva/jose's SignJWT.
//
// usage: node sign_token.mjs <alg> <pkcs8_private_key_pem_path> <kid> <payload_json>
//
// Imports the PKCS#8 private key for <alg> (RS256, ES256, ES384, ES512),
// signs <payload_json> unchanged (the caller supplies every claim: iss, aud,
// exp, iat, nbf, jti, sub, kubernetes.io, ...) with the protected header
// {"alg":<alg>,"kid":<kid>} (no kid member when <kid> is the empty string)
// and prints the compact JWS on one line.
//
// Exit status 0 on success, 2 on bad usage, an unreadable key or a payload
// that is not a JSON object.

import { readFile } from 'node:fs/promises';
import { SignJWT, importPKCS8 } from 'jose';

async function main(argv) {
  if (argv.length !== 4) {
    console.error('usage: node sign_token.mjs <alg> <pkcs8_private_key_pem_path> <kid> <payload_json>');
    return 2;
  }
  const [alg, keyPath, kid, payloadJson] = argv;

  let payload;
  try {
    payload = JSON.parse(payloadJson);
  } catch (err) {
    console.error(`payload is not JSON: ${err && err.message}`);
    return 2;
  }
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) {
    console.error('payload must be a JSON object');
    return 2;
  }

  let privateKey;
  try {
    privateKey = await importPKCS8(await readFile(keyPath, 'utf8'), alg);
  } catch (err) {
    console.error(`cannot import ${keyPath} as a PKCS#8 ${alg} key: ${err && err.message}`);
    return 2;
  }

  const header = kid === '' ? { alg } : { alg, kid };
  const token = await new SignJWT(payload).setProtectedHeader(header).sign(privateKey);
  console.log(token);
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => { process.exitCode = code; },
  (err) => { console.error(`internal: ${err && err.stack}`); process.exitCode = 2; },
);
