// SPDX-License-Identifier: Apache-2.0
// A verifier nobody in this project wrote: panva/jose's createRemoteJWKSet +
// jwtVerify, the way an OIDC relying party checks a service-account token.
//
// usage: node verify_token.mjs <jwks_url> <issuer> <audience> <token>
//
// Fetches the JWKS from <jwks_url> and verifies <token> (RS256, ES256,
// ES384 or ES512) requiring iss == <issuer> and <audience> in aud, with
// jose's default clock checks (exp, nbf).
// Prints "OK <payload JSON>" and exits 0 when the token verifies; prints
// "FAIL <error code>: <message>" and exits 1 otherwise. Exit status 2 means
// bad usage.

import { createRemoteJWKSet, jwtVerify } from 'jose';
import { failure, runCheck } from './verdict.mjs';

async function main(argv) {
  if (argv.length !== 4) {
    console.error('usage: node verify_token.mjs <jwks_url> <issuer> <audience> <token>');
    return 2;
  }
  const [jwksUrl, issuer, audience, token] = argv;
  const JWKS = createRemoteJWKSet(new URL(jwksUrl), { timeoutDuration: 5000, cooldownDuration: 0 });
  try {
    const { payload, protectedHeader } = await jwtVerify(token, JWKS, {
      issuer,
      audience,
      algorithms: ['RS256', 'ES256', 'ES384', 'ES512'],
    });
    console.log(`OK ${JSON.stringify({ header: protectedHeader, payload })}`);
    return 0;
  } catch (err) {
    console.log(failure(err));
    return 1;
  }
}

runCheck(main);
