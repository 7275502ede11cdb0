/*
 * fuzz_tar.c - fuzz target for a workspace snapshot (al_workspace_load_tar, src/lib/
 * workspace_tar.c), through the public API only.
 *
 * Every input is loaded as a tar into a workspace with small limits and a mount entry. A load
 * either fails with AL_CONFIG_ERROR (and leaves the workspace as it was: its tar is the same
 * before and after), or succeeds within the limits; then the workspace's own tar loads into a
 * second workspace and gives the same tar again (the codec round-trips what it accepted).
 * Built as fuzz_replay_tar (CTest fuzz.replay.tar, any compiler) and, with clang, as a
 * libFuzzer binary (fuzz.tar); see tests/fuzz/CMakeLists.txt.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "airlock.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char manifest[] =
        "{\"entries\": {\"seed.txt\": {\"type\": \"file\", \"content\": \"seed\"},"
        " \"lake\": {\"type\": \"s3_mount\", \"mount\": \"m\"}},"
        " \"outputs\": [\"out\"], \"limits\": {\"bytes\": 65536, \"files\": 16, "
        "\"file_bytes\": 8192}}";

static struct al_workspace *fresh(void)
{
    struct al_workspace *ws = NULL;
    if (al_workspace_new(manifest, sizeof manifest - 1, &ws, NULL) != AL_OK) {
        abort();
    }
    return ws;
}

static char *tar_of(const struct al_workspace *ws, size_t *len)
{
    char *t = NULL;
    if (al_workspace_tar(ws, &t, len, NULL) != AL_OK) {
        abort();
    }
    return t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct al_workspace *ws = fresh();
    size_t before_len;
    char *before = tar_of(ws, &before_len);
    struct al_error err;
    enum al_code rc = al_workspace_load_tar(ws, (const char *)data, size, &err);
    size_t after_len;
    char *after = tar_of(ws, &after_len);
    if (rc != AL_OK) {
        if (rc != AL_CONFIG_ERROR && rc != AL_INTERNAL_ERROR) {
            fprintf(stderr, "fuzz_tar: load returned code %d\n", (int)rc);
            abort();
        }
        if (before_len != after_len || memcmp(before, after, before_len) != 0) {
            fprintf(stderr, "fuzz_tar: a failed load changed the workspace\n");
            abort();
        }
    } else {
        struct al_workspace *again = fresh();
        if (al_workspace_load_tar(again, after, after_len, &err) != AL_OK) {
            fprintf(stderr, "fuzz_tar: the workspace's own tar does not load: %s\n", err.message);
            abort();
        }
        size_t round_len;
        char *round = tar_of(again, &round_len);
        if (round_len != after_len || memcmp(round, after, after_len) != 0) {
            fprintf(stderr, "fuzz_tar: the tar does not round-trip\n");
            abort();
        }
        free(round);
        al_workspace_free(again);
    }
    free(before);
    free(after);
    al_workspace_free(ws);
    return 0;
}
