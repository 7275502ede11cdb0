/*
 * fuzz_store.c - fuzz target for the file-backed continuation store (src/lib/store_file.c),
 * through the public al_store operations only.
 *
 * Every input is used two ways:
 *   (a) as the content of a stored file (what another process, a full disk or an attacker with
 *       access to the folder could leave there): claiming it either fails, or returns exactly
 *       the bytes after the first newline when the text before it is an expiry in the future;
 *       a claimed id cannot be claimed again, a released one can (with the same data), a
 *       consumed one never again;
 *   (b) as an id (up to its first NUL): an id outside [A-Za-z0-9_-]{1,AL_STORE_ID_MAX} is
 *       refused with AL_PROTOCOL_ERROR before any file is touched, so no id reaches outside
 *       the folder; a valid one goes through put, claim and consume.
 * The folder is made once per process under /dev/shm when it exists (so fsync costs nothing).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "airlock.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[256];
static struct al_store *store;

static void fail(const char *what, const struct al_error *err)
{
    fprintf(stderr, "fuzz_store: %s%s%s\n", what, err ? ": " : "", err ? err->message : "");
    abort();
}

static void cleanup(void)
{
    char path[512];
    static const char *const left[] = { "fuzz.cont", "fuzz.claimed", "fuzz.tmp" };
    for (size_t i = 0; i < sizeof left / sizeof left[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, left[i]);
        unlink(path);
    }
    al_store_free(store);
    rmdir(dir);
}

static void open_store(void)
{
    if (store) {
        return;
    }
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(dir, sizeof dir, "%s/airlock-fuzz-store-XXXXXX", base);
    if (!mkdtemp(dir)) {
        fail("mkdtemp failed", NULL);
    }
    struct al_error err;
    if (al_store_file_new(dir, &store, &err) != AL_OK) {
        fail("al_store_file_new", &err);
    }
    atexit(cleanup);
}

static int valid_id(const char *id, size_t n)
{
    if (n == 0 || n > AL_STORE_ID_MAX) {
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        char c = id[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-')) {
            return 0;
        }
    }
    return 1;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* What claim must return for a file holding `data`: 1 and the payload when the text before the
 * first newline is a decimal expiry in the future, 0 when it is not. Mirrors the documented
 * format: the expiry in ms since the epoch, a newline, the data. */
static int expect_claim(const uint8_t *data, size_t size, size_t *data_off)
{
    const uint8_t *nl = memchr(data, '\n', size);
    if (!nl || nl == data) {
        return 0;
    }
    size_t n = (size_t)(nl - data);
    *data_off = n + 1;
    char num[32];
    if (n >= sizeof num) {
        return -1; /* a long number: strtoll's range rules, not checked here */
    }
    memcpy(num, data, n);
    num[n] = '\0';
    char *end = NULL;
    errno = 0;
    long long v = strtoll(num, &end, 10);
    if (end != num + n || errno != 0) {
        return -1; /* leading spaces, signs and overflow: strtoll's business */
    }
    return v > now_ms() + 60000 ? 1 : (v <= now_ms() ? 0 : -1);
}

static void as_file(const uint8_t *data, size_t size)
{
    char path[512];
    snprintf(path, sizeof path, "%s/fuzz.cont", dir);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) {
        fail("cannot write the stored file", NULL);
    }
    struct al_error err;
    void *got = NULL;
    size_t got_len = 0;
    size_t off = 0;
    int want = expect_claim(data, size, &off);
    enum al_code rc = store->claim(store, "fuzz", &got, &got_len, &err);
    if (want == 1 && rc != AL_OK) {
        fail("a well-formed unexpired file was not claimed", &err);
    }
    if (want == 0 && rc == AL_OK) {
        fail("a malformed or expired file was claimed", NULL);
    }
    if (rc == AL_OK) {
        if (got_len != size - off || memcmp(got, data + off, got_len) != 0 ||
            ((char *)got)[got_len] != '\0') {
            fail("claim returned other bytes than the file's data", NULL);
        }
        void *again = NULL;
        size_t again_len = 0;
        if (store->claim(store, "fuzz", &again, &again_len, &err) != AL_PROTOCOL_ERROR) {
            fail("a claimed id was claimed twice", NULL);
        }
        if (store->release(store, "fuzz", &err) != AL_OK) {
            fail("release of a claimed id failed", &err);
        }
        if (store->claim(store, "fuzz", &again, &again_len, &err) != AL_OK ||
            again_len != got_len || memcmp(again, got, got_len) != 0) {
            fail("a released id did not claim again with the same data", &err);
        }
        free(again);
        if (store->consume(store, "fuzz", &err) != AL_OK) {
            fail("consume of a claimed id failed", &err);
        }
        if (store->claim(store, "fuzz", &again, &again_len, &err) != AL_PROTOCOL_ERROR ||
            store->release(store, "fuzz", &err) != AL_PROTOCOL_ERROR) {
            fail("a consumed id came back", NULL);
        }
        free(got);
    }
    /* whatever state a refused file was left in */
    char other[512];
    snprintf(other, sizeof other, "%s/fuzz.claimed", dir);
    unlink(path);
    unlink(other);
}

static void as_id(const uint8_t *data, size_t size)
{
    size_t n = strnlen((const char *)data, size);
    char *id = malloc(n + 1);
    if (!id) {
        return;
    }
    memcpy(id, data, n);
    id[n] = '\0';
    struct al_error err;
    enum al_code rc = store->put(store, id, "x", 1, now_ms() + 3600000, &err);
    if (!valid_id(id, n)) {
        if (rc != AL_PROTOCOL_ERROR) {
            fail("an invalid id was not refused", NULL);
        }
        void *got = NULL;
        size_t got_len = 0;
        if (store->claim(store, id, &got, &got_len, &err) != AL_PROTOCOL_ERROR ||
            store->consume(store, id, &err) != AL_PROTOCOL_ERROR ||
            store->release(store, id, &err) != AL_PROTOCOL_ERROR) {
            fail("an invalid id was not refused by claim, consume or release", NULL);
        }
    } else {
        void *got = NULL;
        size_t got_len = 0;
        if (rc != AL_OK) {
            fail("put of a valid id failed", &err);
        }
        if (store->claim(store, id, &got, &got_len, &err) != AL_OK || got_len != 1 ||
            memcmp(got, "x", 1) != 0) {
            fail("a valid id did not claim", &err);
        }
        free(got);
        if (store->consume(store, id, &err) != AL_OK) {
            fail("a valid id did not consume", &err);
        }
    }
    free(id);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    open_store();
    as_file(data, size);
    as_id(data, size);
    return 0;
}
