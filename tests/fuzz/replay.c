/*
 * replay.c - the main() of every fuzz_replay_<target>: feeds each file named on the command
 * line, and each file in each folder named (sorted, dot files skipped), to the target's
 * LLVMFuzzerTestOneInput, as libFuzzer would replay a corpus, so that CTest exercises the fuzz
 * targets without clang (SQLite's fuzzcheck, s2n). A target reports a broken claim by aborting,
 * which fails the test; the input's name is printed before it runs. Crash files libFuzzer
 * writes (crash-*, leak-*, timeout-*) are inputs like any other: replaying a folder of them
 * keeps a found bug failing until it is fixed.
 *
 *   fuzz_replay_<target> [-n MIN] FILE_OR_DIR...
 * Fails when fewer than MIN inputs (default 1) were found, so a lost corpus is not a pass.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REPLAY_MAX_INPUT (16u << 20)

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s: %s\n", path, strerror(errno));
        return -1;
    }
    uint8_t *data = malloc(REPLAY_MAX_INPUT);
    size_t n = data ? fread(data, 1, REPLAY_MAX_INPUT, f) : 0;
    int bad = !data || ferror(f) || !feof(f);
    fclose(f);
    if (bad) {
        fprintf(stderr, "replay: cannot read %s (or larger than %u bytes)\n", path,
                REPLAY_MAX_INPUT);
        free(data);
        return -1;
    }
    /* A copy of exactly n bytes, so that ASan sees any read past the input's end. */
    uint8_t *exact = malloc(n ? n : 1);
    if (!exact) {
        free(data);
        return -1;
    }
    memcpy(exact, data, n);
    free(data);
    fprintf(stderr, "replay: %s (%zu bytes)\n", path, n);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

static int skip_dots(const struct dirent *d)
{
    return d->d_name[0] != '.';
}

/* Returns the number of inputs replayed, or -1. */
static long replay_path(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        return replay_file(path) == 0 ? 1 : -1;
    }
    struct dirent **names = NULL;
    int n = scandir(path, &names, skip_dots, by_name);
    if (n < 0) {
        fprintf(stderr, "replay: cannot list %s: %s\n", path, strerror(errno));
        return -1;
    }
    long count = 0;
    for (int i = 0; i < n; i++) {
        char sub[4096];
        snprintf(sub, sizeof sub, "%s/%s", path, names[i]->d_name);
        struct stat sst;
        if (count >= 0 && stat(sub, &sst) == 0 && S_ISREG(sst.st_mode)) {
            count = replay_file(sub) == 0 ? count + 1 : -1;
        }
        free(names[i]);
    }
    free(names);
    return count;
}

int main(int argc, char **argv)
{
    long min = 1;
    int i = 1;
    if (argc > 2 && strcmp(argv[1], "-n") == 0) {
        char *end = NULL;
        min = strtol(argv[2], &end, 10);
        if (!end || *end || min < 0) {
            fprintf(stderr, "replay: bad -n %s\n", argv[2]);
            return 2;
        }
        i = 3;
    }
    if (i >= argc) {
        fprintf(stderr, "usage: %s [-n MIN] FILE_OR_DIR...\n", argv[0]);
        return 2;
    }
    long total = 0;
    for (; i < argc; i++) {
        long n = replay_path(argv[i]);
        if (n < 0) {
            return 1;
        }
        total += n;
    }
    if (total < min) {
        fprintf(stderr, "replay: %ld inputs, expected at least %ld\n", total, min);
        return 1;
    }
    printf("replay: %ld inputs, every claim held\n", total);
    return 0;
}
