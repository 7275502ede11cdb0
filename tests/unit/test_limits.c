/* unit.limits - limit defaults and the KEY=VALUE parser behind `--limit`. */
/* cmocka.h needs these first */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
/* clang-format on */

#include <string.h>

#include "airlock.h"

static uint64_t parse_ok(const char *kv, enum al_limit expect_which)
{
    enum al_limit which;
    uint64_t v = 0;
    struct al_error err;
    assert_int_equal(al_limit_parse(kv, &which, &v, &err), AL_OK);
    assert_int_equal(which, expect_which);
    return v;
}

static void parse_bad(const char *kv, const char *message_part)
{
    enum al_limit which = AL_LIMIT_COUNT_;
    uint64_t v = 12345;
    struct al_error err;
    memset(&err, 0, sizeof err);
    assert_int_equal(al_limit_parse(kv, &which, &v, &err), AL_CONFIG_ERROR);
    assert_int_equal(err.code, AL_CONFIG_ERROR);
    assert_non_null(strstr(err.message, message_part));
    /* outputs untouched on failure */
    assert_int_equal(which, AL_LIMIT_COUNT_);
    assert_true(v == 12345);
}

static void test_defaults_follow_design(void **state)
{
    (void)state;
    assert_true(al_limit_default(AL_LIMIT_TIMEOUT_MS) == 30000);
    assert_true(al_limit_default(AL_LIMIT_CPU_MS) == 30000);
    assert_true(al_limit_default(AL_LIMIT_MEMORY_BYTES) == 64ull << 20);
    assert_true(al_limit_default(AL_LIMIT_STACK_BYTES) == 2ull << 20);
    assert_true(al_limit_default(AL_LIMIT_SOURCE_BYTES) == 256ull << 10);
    assert_true(al_limit_default(AL_LIMIT_RESULT_BYTES) == 1ull << 20);
    assert_true(al_limit_default(AL_LIMIT_CONSOLE_BYTES) == 64ull << 10);
    assert_true(al_limit_default(AL_LIMIT_HOST_ARGS_BYTES) == 1ull << 20);
    assert_true(al_limit_default(AL_LIMIT_HOST_OUTPUT_BYTES) == 4ull << 20);
    assert_true(al_limit_default(AL_LIMIT_HOST_CALLS) == 256);
    assert_true(al_limit_default(AL_LIMIT_IN_FLIGHT) == 32);
    assert_true(al_limit_default(AL_LIMIT_COUNT_) == 0);
    assert_null(al_limit_name(AL_LIMIT_COUNT_));
}

static void test_durations(void **state)
{
    (void)state;
    assert_true(parse_ok("timeout=250ms", AL_LIMIT_TIMEOUT_MS) == 250);
    assert_true(parse_ok("timeout=2s", AL_LIMIT_TIMEOUT_MS) == 2000);
    assert_true(parse_ok("cpu=75", AL_LIMIT_CPU_MS) == 75);
    parse_bad("timeout=1.5s", "duration");
    parse_bad("timeout=5m", "duration");
    parse_bad("timeout=0", "out of range");
    parse_bad("timeout=-1", "duration");
    parse_bad("timeout=", "duration");
}

static void test_sizes(void **state)
{
    (void)state;
    assert_true(parse_ok("memory=64M", AL_LIMIT_MEMORY_BYTES) == 64ull << 20);
    assert_true(parse_ok("result=1K", AL_LIMIT_RESULT_BYTES) == 1024);
    assert_true(parse_ok("console=100", AL_LIMIT_CONSOLE_BYTES) == 100);
    assert_true(parse_ok("host-output=64M", AL_LIMIT_HOST_OUTPUT_BYTES) == 64ull << 20);
    assert_true(parse_ok("memory=1G", AL_LIMIT_MEMORY_BYTES) == 1ull << 30);
    /* payload limits stay inside a protocol frame */
    parse_bad("host-output=1G", "out of range");
    parse_bad("result=65M", "out of range");
    parse_bad("source=1G", "out of range");
    assert_true(parse_ok("stack=64M", AL_LIMIT_STACK_BYTES) == 64ull << 20);
    parse_bad("stack=65M", "out of range");
    parse_bad("memory=12X", "size");
    parse_bad("memory=99999999999999999999999", "size");
    parse_bad("memory=18446744073709551615G", "size");
}

static void test_counts_and_keys(void **state)
{
    (void)state;
    assert_true(parse_ok("host-calls=3", AL_LIMIT_HOST_CALLS) == 3);
    assert_true(parse_ok("in-flight=1", AL_LIMIT_IN_FLIGHT) == 1);
    parse_bad("host-calls=3K", "count");
    parse_bad("bogus=1", "unknown limit 'bogus'");
    parse_bad("timeout", "KEY=VALUE");
    parse_bad("=5", "unknown limit");
    for (int i = 0; i < AL_LIMIT_COUNT_; i++) {
        assert_non_null(al_limit_name((enum al_limit)i));
    }
}

static void test_config_setters_validate(void **state)
{
    (void)state;
    struct al_config *c = al_config_new();
    assert_non_null(c);
    assert_int_equal(al_config_set_limit(c, AL_LIMIT_TIMEOUT_MS, 0), AL_CONFIG_ERROR);
    assert_int_equal(al_config_set_limit(c, AL_LIMIT_STACK_BYTES, (64ull << 20) + 1),
                     AL_CONFIG_ERROR);
    assert_int_equal(al_config_set_limit(c, AL_LIMIT_COUNT_, 1), AL_CONFIG_ERROR);
    assert_int_equal(al_config_set_limit(c, AL_LIMIT_TIMEOUT_MS, 10), AL_OK);
    al_config_free(c);
    al_config_free(NULL);
}

static void test_code_names_roundtrip(void **state)
{
    (void)state;
    for (int i = 0; i <= AL_INTERNAL_ERROR; i++) {
        const char *name = al_code_name((enum al_code)i);
        assert_int_equal(al_code_from_name(name), i);
        assert_true(strlen(al_code_message((enum al_code)i)) > 0);
    }
    assert_string_equal(al_code_name((enum al_code)999), "UNKNOWN");
    assert_int_equal(al_code_from_name("NOPE"), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_follow_design),
        cmocka_unit_test(test_durations),
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_counts_and_keys),
        cmocka_unit_test(test_config_setters_validate),
        cmocka_unit_test(test_code_names_roundtrip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
