/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the JSON config file (config/config.c), read through
 * `serve --config FILE`. The input is written to a memfd each run. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config/config.h"

static int fd = -1;
static char path[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[CONFIG_ERR_MAX];
    char a0[] = "oidc-discovery", a1[] = "serve", a2[] = "--config";
    char *argv[] = {a0, a1, a2, path, NULL};
    enum config_command cmd;
    struct config cfg;

    if (fd < 0) {
        if ((fd = memfd_create("fuzz-config", 0)) < 0) {
            perror("memfd_create");
            abort();
        }
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size) {
        perror("memfd write");
        abort();
    }
    memset(&cfg, 0, sizeof(cfg));
    if (config_parse(4, argv, &cmd, &cfg, err, sizeof(err)) == 0)
        config_free(&cfg);
    return 0;
}
