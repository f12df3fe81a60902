/* SPDX-License-Identifier: Apache-2.0 */
#include "util/log.h"

#include "util/jsonw.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Longest message kept; longer ones are cut at a UTF-8 character boundary. */
#define LOG_MSG_MAX 4096

/* Distinct messages log_once remembers. */
#define LOG_ONCE_MAX 256

static const char *const log_level_names[] = {"error", "warn", "info", "debug"};

/* Plain statics, not atomics: log_init runs before any thread starts and
 * nothing changes them afterwards, so every later read sees the same value. */
static enum log_level log_max_level = LOG_INFO;
static int log_json;

void log_init(enum log_level level, int json)
{
    log_max_level = level;
    log_json = json;
}

int log_level_parse(const char *name, enum log_level *out)
{
    for (size_t i = 0; i < sizeof(log_level_names) / sizeof(log_level_names[0]); i++) {
        if (strcmp(name, log_level_names[i]) == 0) {
            *out = (enum log_level)i;
            return 0;
        }
    }
    return -1;
}

/* Length of s[0..len) without a trailing UTF-8 sequence that truncation cut
 * short, so a bounded message never ends in half a character. */
static size_t log_utf8_trim(const char *s, size_t len)
{
    size_t lead = len, need;

    /* A sequence is at most 4 bytes: look back over up to 3 continuations. */
    while (lead > 0 && len - lead < 3 && ((unsigned char)s[lead - 1] & 0xc0) == 0x80)
        lead--;
    if (lead == 0)
        return len;
    unsigned char c = (unsigned char)s[lead - 1];
    need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
    return len - (lead - 1) < need ? lead - 1 : len;
}

static __thread const char *log_prefix; /* log_thread_prefix's */

void log_thread_prefix(const char *prefix)
{
    log_prefix = prefix;
}

/* Formats the message into msg (LOG_MSG_MAX bytes), after this thread's
 * prefix, and returns its length. */
static size_t log_format(char *msg, const char *fmt, va_list ap)
{
    int p = log_prefix != NULL ? snprintf(msg, LOG_MSG_MAX / 2, "%s", log_prefix) : 0;
    int n;

    p = p < 0 ? 0 : p >= LOG_MSG_MAX / 2 ? LOG_MSG_MAX / 2 - 1 : p;
    n = vsnprintf(msg + p, LOG_MSG_MAX - (size_t)p, fmt, ap);
    n = n < 0 ? n : n + p;

    if (n < 0) {
        msg[0] = '\0';
        return 0;
    }
    if ((size_t)n < LOG_MSG_MAX)
        return (size_t)n;
    return log_utf8_trim(msg, LOG_MSG_MAX - 1);
}

/* Writes "2026-01-01T00:00:00.000Z" (24 characters and a NUL) for now. */
static void log_timestamp(char out[25])
{
    struct timespec now;
    struct tm tm;

    clock_gettime(CLOCK_REALTIME, &now);
    gmtime_r(&now.tv_sec, &tm);
    size_t n = strftime(out, 25, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, 25 - n, ".%03ldZ", now.tv_nsec / 1000000);
}

/* One write(2) per line, so lines from different threads never interleave. */
static void log_write(const char *line, size_t len)
{
    if (write(STDERR_FILENO, line, len) < 0) {
        /* Nowhere left to report a failing stderr. */
    }
}

/* "2026-01-01T00:00:00.000Z info  message\n", the level padded to 5. A
 * control character in the message is written as \xNN: callers quote what
 * they take from files, tokens and peers, and this keeps any that slips
 * through from starting a forged line or driving the terminal. */
static void log_text(const char *stamp, enum log_level level, const char *msg, size_t len)
{
    char line[4 * LOG_MSG_MAX + 64];
    size_t n = (size_t)snprintf(line, 64, "%s %-5s ", stamp, log_level_names[level]);

    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)msg[i];
        if (c < 0x20 || c == 0x7f)
            n += (size_t)snprintf(line + n, 5, "\\x%02x", c);
        else
            line[n++] = (char)c;
    }
    line[n++] = '\n';
    log_write(line, n);
}

/* {"time":...,"level":...,"msg":...}\n with the message escaped as Go
 * would; dropped if memory runs out, as there is nowhere to say so. */
static void log_json_line(const char *stamp, enum log_level level, const char *msg, size_t len)
{
    struct jsonw w = {0};
    char *line;
    size_t n;

    jsonw_lit(&w, "{\"time\":\"");
    jsonw_lit(&w, stamp);
    jsonw_lit(&w, "\",\"level\":\"");
    jsonw_lit(&w, log_level_names[level]);
    jsonw_lit(&w, "\",\"msg\":");
    jsonw_strn(&w, msg, len);
    jsonw_lit(&w, "}\n");
    if (jsonw_finish(&w, &line, &n) != 0)
        return;
    log_write(line, n);
    free(line);
}

/* Whether msg is new to log_once, remembering it if so. The messages are
 * kept as 64-bit FNV-1a hashes in a ring, so memory stays bounded whatever
 * the inputs; one pushed out of the ring may be logged again. */
static int log_first_time(const char *msg, size_t len)
{
    static uint64_t seen[LOG_ONCE_MAX];
    static size_t count;
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    uint64_t h = 0xcbf29ce484222325ULL;
    int fresh = 1;

    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)msg[i]) * 0x100000001b3ULL;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; fresh && i < count && i < LOG_ONCE_MAX; i++)
        fresh = seen[i] != h;
    if (fresh)
        seen[count++ % LOG_ONCE_MAX] = h;
    pthread_mutex_unlock(&lock);
    return fresh;
}

/* Formats and writes one line at level; with once, only if log_once has
 * not written the very same message before. */
static void log_vwrite(enum log_level level, int once, const char *fmt, va_list ap)
{
    char msg[LOG_MSG_MAX], stamp[25];
    size_t len;

    if (level > log_max_level)
        return;
    len = log_format(msg, fmt, ap);
    if (once && !log_first_time(msg, len))
        return;
    log_timestamp(stamp);
    if (log_json)
        log_json_line(stamp, level, msg, len);
    else
        log_text(stamp, level, msg, len);
}

void log_msg(enum log_level level, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    log_vwrite(level, 0, fmt, ap);
    va_end(ap);
}

void log_once(enum log_level level, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    log_vwrite(level, 1, fmt, ap);
    va_end(ap);
}
