// SPDX-License-Identifier: Apache-2.0
// How the checking scripts here report: "OK ..." and exit 0 when the check
// passed, "FAIL <error code>: <message>" and exit 1 when it did not, exit 2
// for bad usage. The e2e tests read the first word and the status.

// The FAIL line for an error a library threw (jose errors carry a code,
// openid-client's a name).
export function failure(err) {
  return `FAIL ${(err && err.code) || (err && err.name) || 'error'}: ${err && err.message}`;
}

// Runs main(argv) and exits with the status it returns; an exception that
// escaped main is a failed check, with its stack.
export function runCheck(main) {
  main(process.argv.slice(2)).then(
    (code) => { process.exitCode = code; },
    (err) => { console.log(`FAIL internal: ${err && err.stack}`); process.exitCode = 1; },
  );
}
