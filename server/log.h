/*
 * log: one line per event on stderr, with a UTC timestamp and a level.
 * Lines are written with a single write(2) so threads never interleave.
 */
#ifndef OIDC_LOG_H
#define OIDC_LOG_H

enum log_level { LOG_ERROR, LOG_WARN, LOG_INFO, LOG_DEBUG };

void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
