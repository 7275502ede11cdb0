/* unit.secretbox - sealing connector secrets (src/server/secretbox.c): a round trip, and every
 * way a sealed value must refuse to open: another key, any altered byte, another context (moved
 * to another connector or field), a truncated or unversioned text; the key file is made once,
 * 0600, and read back; AIRLOCK_SECRET_KEY wins over it and is checked; a running server's keys
 * (secretbox_keys) seal with the key in use and open with it, the older ones and the staged one. */
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
#include <unistd.h>

#include "secretbox.h"

static const unsigned char key_a[SECRETBOX_KEY_LEN] = { 1, 2, 3 };
static const unsigned char key_b[SECRETBOX_KEY_LEN] = { 1, 2, 4 };
static const char secret[] = "s3cr3t-signing-key-0123456789";
static const char ctx_secret[] = "connector/crm/signing_secret";

static char *seal(const unsigned char *key, const char *context, const char *plain)
{
    char *sealed = NULL;
    assert_int_equal(secretbox_seal(key, context, plain, strlen(plain), &sealed), 0);
    assert_non_null(sealed);
    return sealed;
}

static int opens(const unsigned char *key, const char *context, const char *sealed)
{
    char *plain = NULL;
    size_t len = 0;
    int rc = secretbox_open(key, context, sealed, &plain, &len);
    free(plain);
    return rc == 0;
}

static void test_secretbox_round_trip(void **state)
{
    (void)state;
    char *sealed = seal(key_a, ctx_secret, secret);
    char *plain = NULL;
    size_t len = 0;
    assert_int_equal(strncmp(sealed, "v1:", 3), 0);
    assert_null(strstr(sealed, secret));
    assert_int_equal(secretbox_open(key_a, ctx_secret, sealed, &plain, &len), 0);
    assert_int_equal(len, strlen(secret));
    assert_string_equal(plain, secret);
    free(plain);
    /* a fresh nonce each time: the same secret never seals to the same text */
    char *again = seal(key_a, ctx_secret, secret);
    assert_string_not_equal(sealed, again);
    free(again);
    free(sealed);
    /* empty plaintext works too */
    sealed = seal(key_a, ctx_secret, "");
    assert_int_equal(secretbox_open(key_a, ctx_secret, sealed, &plain, &len), 0);
    assert_int_equal(len, 0);
    free(plain);
    free(sealed);
}

static void test_secretbox_wrong_key_refused(void **state)
{
    (void)state;
    char *sealed = seal(key_a, ctx_secret, secret);
    assert_false(opens(key_b, ctx_secret, sealed));
    free(sealed);
}

static void test_secretbox_tampered_byte_refused(void **state)
{
    (void)state;
    char *sealed = seal(key_a, ctx_secret, secret);
    size_t len = strlen(sealed);
    /* every hex digit of nonce, ciphertext and tag, flipped in turn */
    for (size_t i = 3; i < len; i++) {
        char saved = sealed[i];
        sealed[i] = saved == '0' ? '1' : '0';
        assert_false(opens(key_a, ctx_secret, sealed));
        sealed[i] = saved;
    }
    assert_true(opens(key_a, ctx_secret, sealed));
    /* truncated, extended, unversioned, not hex */
    sealed[len - 2] = '\0';
    assert_false(opens(key_a, ctx_secret, sealed));
    free(sealed);
    sealed = seal(key_a, ctx_secret, secret);
    assert_false(opens(key_a, ctx_secret, sealed + 3));
    sealed[1] = '2';
    assert_false(opens(key_a, ctx_secret, sealed));
    free(sealed);
    assert_false(opens(key_a, ctx_secret, "v1:zz"));
    assert_false(opens(key_a, ctx_secret, "v1:"));
    assert_false(opens(key_a, ctx_secret, ""));
}

static void test_secretbox_moved_context_refused(void **state)
{
    (void)state;
    char *sealed = seal(key_a, ctx_secret, secret);
    assert_false(opens(key_a, "connector/erp/signing_secret", sealed));
    assert_false(opens(key_a, "connector/crm/headers", sealed));
    assert_false(opens(key_a, "connector/crm/signing_secre", sealed));
    assert_true(opens(key_a, ctx_secret, sealed));
    free(sealed);
}

static void test_secretbox_keys_seal_with_the_first_and_open_with_any(void **state)
{
    (void)state;
    static const unsigned char key_c[SECRETBOX_KEY_LEN] = { 1, 2, 5 };
    struct secretbox_keys keys;
    struct keyfile_ring ring = { .len = SECRETBOX_KEY_LEN, .n = 2, .has_next = 1 };
    char *sealed = NULL;
    char *plain = NULL;
    size_t len = 0;
    assert_int_equal(secretbox_keys_init(&keys), 0);
    /* no key yet: nothing seals, nothing opens */
    assert_int_equal(secretbox_keys_seal(&keys, ctx_secret, secret, strlen(secret), &sealed), -1);
    char *under_a = seal(key_a, ctx_secret, secret);
    char *under_c = seal(key_c, ctx_secret, secret);
    assert_int_equal(secretbox_keys_open(&keys, ctx_secret, under_a, &plain, &len), -1);
    /* in use b, then a (replaced by it), c staged */
    memcpy(ring.keys, key_b, SECRETBOX_KEY_LEN);
    memcpy(ring.keys + SECRETBOX_KEY_LEN, key_a, SECRETBOX_KEY_LEN);
    memcpy(ring.next, key_c, SECRETBOX_KEY_LEN);
    secretbox_keys_set(&keys, &ring);
    assert_int_equal(secretbox_keys_seal(&keys, ctx_secret, secret, strlen(secret), &sealed), 0);
    assert_true(opens(key_b, ctx_secret, sealed));
    assert_false(opens(key_a, ctx_secret, sealed));
    for (int i = 0; i < 3; i++) {
        const char *v = i == 0 ? sealed : i == 1 ? under_a : under_c;
        assert_int_equal(secretbox_keys_open(&keys, ctx_secret, v, &plain, &len), 0);
        assert_string_equal(plain, secret);
        free(plain);
    }
    /* another context opens under none of them */
    assert_int_equal(
            secretbox_keys_open(&keys, "connector/other/signing_secret", under_a, &plain, &len),
            -1);
    /* replaced by b alone: what a or c sealed no longer opens */
    secretbox_keys_one(&keys, key_b);
    assert_int_equal(secretbox_keys_open(&keys, ctx_secret, under_a, &plain, &len), -1);
    assert_int_equal(secretbox_keys_open(&keys, ctx_secret, under_c, &plain, &len), -1);
    assert_int_equal(secretbox_keys_open(&keys, ctx_secret, sealed, &plain, &len), 0);
    free(plain);
    free(sealed);
    free(under_a);
    free(under_c);
    secretbox_keys_done(&keys);
}

static void test_secretbox_key_file(void **state)
{
    (void)state;
    char dir[] = "/tmp/unit-secretbox-XXXXXX";
    char path[64];
    struct al_error err;
    unsigned char k1[SECRETBOX_KEY_LEN];
    unsigned char k2[SECRETBOX_KEY_LEN];
    struct stat st;
    memset(&err, 0, sizeof err);
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/secret.key", dir);
    unsetenv("AIRLOCK_SECRET_KEY");
    assert_int_equal(secretbox_key_load(dir, k1, &err), 0);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(st.st_size, 65);
    assert_int_equal(secretbox_key_load(dir, k2, &err), 0);
    assert_memory_equal(k1, k2, sizeof k1);
    /* the environment wins */
    setenv("AIRLOCK_SECRET_KEY", "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
           1);
    assert_int_equal(secretbox_key_load(dir, k2, &err), 0);
    assert_int_equal(k2[0], 0);
    assert_int_equal(k2[31], 0x1f);
    setenv("AIRLOCK_SECRET_KEY", "0011", 1);
    assert_int_equal(secretbox_key_load(dir, k2, &err), -1);
    assert_int_equal(err.code, AL_CONFIG_ERROR);
    assert_non_null(strstr(err.message, "AIRLOCK_SECRET_KEY"));
    unsetenv("AIRLOCK_SECRET_KEY");
    /* a damaged file is refused, never replaced */
    FILE *f = fopen(path, "w");
    fputs("not hex\n", f);
    fclose(f);
    assert_int_equal(secretbox_key_load(dir, k2, &err), -1);
    assert_int_equal(err.code, AL_CONFIG_ERROR);
    assert_non_null(strstr(err.message, "secret.key"));
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_secretbox_round_trip),
        cmocka_unit_test(test_secretbox_wrong_key_refused),
        cmocka_unit_test(test_secretbox_tampered_byte_refused),
        cmocka_unit_test(test_secretbox_moved_context_refused),
        cmocka_unit_test(test_secretbox_keys_seal_with_the_first_and_open_with_any),
        cmocka_unit_test(test_secretbox_key_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
