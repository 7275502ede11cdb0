/*
 * tsstrip_cli.c - `tsstrip-cli [--transform] [--name NAME] < in.ts > out.js`: ts_strip() over
 * standard input, for the differential harness and for trying the stripper by hand. Test-only:
 * it lives in the build folder and is never installed. Exit status: 0 stripped, 1 refused or
 * syntax error (the message on stderr), 2 usage or I/O error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tsstrip.h"

int main(int argc, char **argv)
{
    struct ts_options opts = { 0 };
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--transform") == 0) {
            opts.flags |= TS_TRANSFORM;
        } else if (strcmp(argv[i], "--name") == 0 && i + 1 < argc) {
            opts.name = argv[++i];
        } else {
            fprintf(stderr, "usage: tsstrip-cli [--transform] [--name NAME] < in.ts > out.js\n");
            return 2;
        }
    }
    size_t len = 0;
    size_t cap = 1 << 16;
    char *src = malloc(cap);
    if (src == NULL) {
        return 2;
    }
    for (;;) {
        if (len == cap) {
            cap *= 2;
            char *n = realloc(src, cap);
            if (n == NULL) {
                free(src);
                return 2;
            }
            src = n;
        }
        size_t got = fread(src + len, 1, cap - len, stdin);
        if (got == 0) {
            break;
        }
        len += got;
    }
    if (ferror(stdin)) {
        free(src);
        return 2;
    }
    char *out = NULL;
    size_t out_len = 0;
    struct ts_error err;
    int rc = ts_strip_opts(src, len, &opts, &out, &out_len, &err);
    free(src);
    if (rc != 0) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    int status = fwrite(out, 1, out_len, stdout) == out_len ? 0 : 2;
    free(out);
    return status;
}
