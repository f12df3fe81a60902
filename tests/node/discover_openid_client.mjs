// SPDX-License-Identifier: Apache-2.0
// A relying party nobody in this project wrote: panva/openid-client 5.x.
//
// usage: NODE_EXTRA_CA_CERTS=ca.pem node discover_openid_client.mjs <issuer_url> [<id_token> <client_id> <alg>]
//
// Runs Issuer.discover(<issuer_url>) over HTTPS (the test CA comes from
// NODE_EXTRA_CA_CERTS), fetches the JWKS through openid-client's own
// keystore code, and, when a token is given, validates it as an ID token
// of a client <client_id> whose id_token_signed_response_alg is <alg>
// (signature against the served JWKS, iss, aud, exp, iat).
//
// Prints one JSON line {"issuer", "jwks_uri", "kids", "validated"} and exits
// 0 on success; prints "FAIL <name>: <message>" and exits 1 otherwise.
// Exit status 2 means bad usage.

import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Issuer, TokenSet } from 'openid-client';
import { failure, runCheck } from './verdict.mjs';

// openid-client 5 keeps an issuer's fetched key store in a private WeakMap;
// the same CommonJS module instance is reached by its file path.
const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const { keystores } = require(path.join(here, 'node_modules', 'openid-client', 'lib', 'helpers', 'weak_cache.js'));

async function main(argv) {
  if (argv.length !== 1 && argv.length !== 4) {
    console.error('usage: node discover_openid_client.mjs <issuer_url> [<id_token> <client_id> <alg>]');
    return 2;
  }
  const [issuerUrl, idToken, clientId, alg] = argv;
  try {
    const issuer = await Issuer.discover(issuerUrl);
    await issuer.reloadJwksUri();
    const store = await keystores.get(issuer);
    if (!store) throw new Error('no key store after reloadJwksUri()');
    const kids = store.toJWKS().keys.map((k) => k.kid);
    let validated = null;
    if (idToken) {
      const client = new issuer.Client({
        client_id: clientId,
        response_types: ['id_token'],
        id_token_signed_response_alg: alg,
        token_endpoint_auth_method: 'none',
      });
      const tokenSet = await client.validateIdToken(new TokenSet({ id_token: idToken }), undefined, 'token');
      validated = tokenSet.claims().sub;
    }
    console.log(JSON.stringify({
      issuer: issuer.metadata.issuer,
      jwks_uri: issuer.metadata.jwks_uri,
      kids,
      validated,
    }));
    return 0;
  } catch (err) {
    console.log(failure(err));
    return 1;
  }
}

runCheck(main);
