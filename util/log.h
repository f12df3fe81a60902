/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log: one line per event on stderr, as text ("2026-01-01T00:00:00.000Z info
 * message") or as JSON ({"time":...,"level":...,"msg":...}) for log
 * pipelines. Lines are written with a single write(2), so threads never
 * interleave, and below the configured level nothing is formatted at all.
 */
#ifndef OIDC_LOG_H
#define OIDC_LOG_H

enum log_level { LOG_ERROR, LOG_WARN, LOG_INFO, LOG_DEBUG };

/* Sets the level and format. Call once, before threads start; the default
 * is info and text. */
void log_init(enum log_level level, int json);

/* Parses "error", "warn", "info" or "debug". Returns 0 or -1. */
int log_level_parse(const char *name, enum log_level *out);

void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* log_msg, unless this very message was logged by log_once before: for
 * findings that every reload would repeat (a key file's permissions). */
void log_once(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Puts prefix (kept by the caller; NULL for none) before every message
 * this thread logs from now on: a fleet's reloaders are the one-issuer
 * code, and their lines say which issuer they are about this way. */
void log_thread_prefix(const char *prefix);

#endif
