/* SPDX-License-Identifier: Apache-2.0 */
/*
 * server: the serving process from start to exit.
 *
 * It builds what is served first (the snapshot of the key files, reload.h,
 * and the TLS certificate, cert.h), opens every listener, starts one
 * worker per --threads and kind of listener, and hands the workers each
 * snapshot and certificate through one door (server_publish), the first
 * ones included. With --upstream, a thread of its own reads the API
 * server (mirror_thread.h) and hands each new key set to the reload
 * thread. A reload thread runs the passes when the schedule says
 * (schedule.h): a watched file changed, SIGHUP, --key-reload-interval, a
 * deadline of the inputs. The main thread only waits for signals, so
 * SIGTERM is acted on even while a read on the reload thread never
 * returns; /livez reports such a stall (health.h). On SIGTERM or SIGINT,
 * /readyz turns 503 for --shutdown-grace, then the workers drain.
 */
#ifndef OIDC_SERVER_H
#define OIDC_SERVER_H

#include "config/config.h"

/* Serves cfg until SIGTERM or SIGINT, then for --shutdown-grace more.
 * Returns the process exit status: 0 after a clean shutdown, 2 when the
 * key files, the retention state or the certificate give nothing to serve
 * (an input error, as a bad flag), 1 when it could not start otherwise.
 * When the reload thread is stuck in a read at the end, it still uses cfg:
 * server_run then ends the process itself (_exit) instead of returning. */
int server_run(const struct config *cfg);

#endif
