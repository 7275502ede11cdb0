/* unit.keyfile - the key files of the data directory (src/server/keyfile.c) as a rotation uses
 * them: a file of several keys is read back key by key (the first by keyfile_load, the rest by
 * keyfile_load_previous), a malformed older line is refused naming its line, the environment's
 * key hides the file's older keys, a ring (keyfile_load_ring) holds the staged NAME.next too, and
 * the directory's lock is held by one process alone. */
/* cmocka.h needs these first */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
/* clang-format on */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "keyfile.h"

#define LEN 32

static char dir[] = "/tmp/unit-keyfile-XXXXXX";

static void test_keyfile_keeps_older_keys_in_order(void **state)
{
    (void)state;
    unsigned char keys[3 * LEN];
    unsigned char got[LEN];
    unsigned char older[4 * LEN];
    size_t n = 99;
    for (size_t i = 0; i < sizeof keys; i++) {
        keys[i] = (unsigned char)(i * 7 + 1);
    }
    assert_int_equal(keyfile_write(dir, "k.key", keys, LEN, 3, NULL), 0);
    assert_int_equal(keyfile_load(dir, "k.key", NULL, LEN, got, NULL), 0);
    assert_memory_equal(got, keys, LEN);
    assert_int_equal(keyfile_load_previous(dir, "k.key", NULL, LEN, older, 4, &n, NULL), 0);
    assert_int_equal(n, 2);
    assert_memory_equal(older, keys + LEN, 2 * LEN);
    /* no more than asked for */
    assert_int_equal(keyfile_load_previous(dir, "k.key", NULL, LEN, older, 1, &n, NULL), 0);
    assert_int_equal(n, 1);
    /* 0600, whatever the umask */
    struct stat st;
    char path[256];
    snprintf(path, sizeof path, "%s/k.key", dir);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    /* one key: nothing older; no file: nothing older */
    assert_int_equal(keyfile_write(dir, "k.key", keys, LEN, 1, NULL), 0);
    assert_int_equal(keyfile_load_previous(dir, "k.key", NULL, LEN, older, 4, &n, NULL), 0);
    assert_int_equal(n, 0);
    assert_int_equal(keyfile_load_previous(dir, "none.key", NULL, LEN, older, 4, &n, NULL), 0);
    assert_int_equal(n, 0);
}

static void test_keyfile_ring_holds_the_staged_key(void **state)
{
    (void)state;
    unsigned char keys[2 * LEN];
    unsigned char next[LEN];
    struct keyfile_ring ring;
    struct al_error err;
    char path[256];
    memset(&err, 0, sizeof err);
    for (size_t i = 0; i < sizeof keys; i++) {
        keys[i] = (unsigned char)(i * 3 + 5);
    }
    memset(next, 0x42, sizeof next);
    unsetenv("UNIT_KEYFILE_KEY");
    assert_int_equal(keyfile_write(dir, "r.key", keys, LEN, 2, NULL), 0);
    assert_int_equal(keyfile_load_ring(dir, "r.key", "UNIT_KEYFILE_KEY", LEN, &ring, &err), 0);
    assert_int_equal(ring.len, LEN);
    assert_int_equal(ring.n, 2);
    assert_memory_equal(ring.keys, keys, 2 * LEN);
    assert_false(ring.has_next);
    /* reading a ring never makes a staged key */
    snprintf(path, sizeof path, "%s/r.key.next", dir);
    assert_int_equal(access(path, F_OK), -1);
    assert_int_equal(keyfile_write(dir, "r.key.next", next, LEN, 1, NULL), 0);
    assert_int_equal(keyfile_load_ring(dir, "r.key", "UNIT_KEYFILE_KEY", LEN, &ring, &err), 0);
    assert_int_equal(ring.n, 2);
    assert_true(ring.has_next);
    assert_memory_equal(ring.next, next, LEN);
    /* the environment's key: neither the file's older keys nor its staged one */
    setenv("UNIT_KEYFILE_KEY", "4242424242424242424242424242424242424242424242424242424242424242",
           1);
    assert_int_equal(keyfile_load_ring(dir, "r.key", "UNIT_KEYFILE_KEY", LEN, &ring, &err), 0);
    assert_int_equal(ring.n, 1);
    assert_false(ring.has_next);
    unsetenv("UNIT_KEYFILE_KEY");
    /* a staged file that is not a key is refused, naming it */
    FILE *f = fopen(path, "w");
    fputs("not a key\n", f);
    fclose(f);
    assert_int_equal(keyfile_load_ring(dir, "r.key", NULL, LEN, &ring, &err), -1);
    assert_int_equal(err.code, AL_CONFIG_ERROR);
    assert_non_null(strstr(err.message, "r.key.next"));
    unlink(path);
    snprintf(path, sizeof path, "%s/r.key", dir);
    unlink(path);
}

static void test_keyfile_refuses_a_malformed_older_key(void **state)
{
    (void)state;
    unsigned char older[4 * LEN];
    size_t n = 0;
    struct al_error err;
    char path[256];
    snprintf(path, sizeof path, "%s/bad.key", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "%064d\n%064d\nnot-hex\n", 1, 2);
    fclose(f);
    memset(&err, 0, sizeof err);
    assert_int_equal(keyfile_load_previous(dir, "bad.key", NULL, LEN, older, 4, &n, &err), -1);
    assert_non_null(strstr(err.message, "line 3"));
    /* a key given by the environment: the file's older keys are not its */
    setenv("UNIT_KEYFILE_KEY", "ab", 1);
    assert_int_equal(
            keyfile_load_previous(dir, "bad.key", "UNIT_KEYFILE_KEY", LEN, older, 4, &n, NULL), 0);
    assert_int_equal(n, 0);
    unsetenv("UNIT_KEYFILE_KEY");
}

static void test_keyfile_lock_is_one_process_s(void **state)
{
    (void)state;
    int fd = -1;
    assert_int_equal(keyfile_lock(dir, &fd, NULL), 0);
    pid_t pid = fork();
    if (pid == 0) {
        int other = -1;
        _exit(keyfile_lock(dir, &other, NULL) == 1 ? 0 : 1); /* held by the parent */
    }
    int status = -1;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    close(fd);
    assert_int_equal(keyfile_lock(dir, &fd, NULL), 0); /* released with its descriptor */
    close(fd);
}

static int setup(void **state)
{
    (void)state;
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "%s/k.key", dir);
    unlink(cmd);
    snprintf(cmd, sizeof cmd, "%s/bad.key", dir);
    unlink(cmd);
    return rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keyfile_keeps_older_keys_in_order),
        cmocka_unit_test(test_keyfile_ring_holds_the_staged_key),
        cmocka_unit_test(test_keyfile_refuses_a_malformed_older_key),
        cmocka_unit_test(test_keyfile_lock_is_one_process_s),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
