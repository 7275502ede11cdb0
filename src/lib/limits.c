/*
 * limits.c - every limit's default (the table in README.md, "Limits and errors"), its CLI
 * name and the KEY=VALUE parser.
 * Parsing rejects anything ambiguous: no negative numbers, no zero, no overflow, no junk.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "internal.h"

enum limit_kind { KIND_DURATION, KIND_SIZE, KIND_COUNT };

/* Upper bounds keep arithmetic on limits safe and every payload inside a protocol frame
 * (docs/protocol.md: 128 MiB from the host, 160 MiB from the worker). */
#define MAX_DURATION_MS (365ull * 24 * 3600 * 1000)
#define MAX_PAYLOAD     (64ull << 20)
#define MAX_HEAP        (1ull << 40)
#define MAX_COUNT       (1ull << 24)

static const struct {
    const char *name;
    enum limit_kind kind;
    uint64_t def;
    uint64_t max;
} limit_table[AL_LIMIT_COUNT_] = {
    [AL_LIMIT_TIMEOUT_MS] = { "timeout", KIND_DURATION, 30000, MAX_DURATION_MS },
    [AL_LIMIT_CPU_MS] = { "cpu", KIND_DURATION, 30000, MAX_DURATION_MS },
    [AL_LIMIT_MEMORY_BYTES] = { "memory", KIND_SIZE, 64ull << 20, MAX_HEAP },
    [AL_LIMIT_STACK_BYTES] = { "stack", KIND_SIZE, 2ull << 20, AL_STACK_MAX },
    [AL_LIMIT_SOURCE_BYTES] = { "source", KIND_SIZE, 256ull << 10, MAX_PAYLOAD },
    [AL_LIMIT_RESULT_BYTES] = { "result", KIND_SIZE, 1ull << 20, MAX_PAYLOAD },
    [AL_LIMIT_CONSOLE_BYTES] = { "console", KIND_SIZE, 64ull << 10, MAX_PAYLOAD },
    [AL_LIMIT_HOST_ARGS_BYTES] = { "host-args", KIND_SIZE, 1ull << 20, MAX_PAYLOAD },
    [AL_LIMIT_HOST_OUTPUT_BYTES] = { "host-output", KIND_SIZE, 4ull << 20, MAX_PAYLOAD },
    [AL_LIMIT_HOST_CALLS] = { "host-calls", KIND_COUNT, 256, MAX_COUNT },
    [AL_LIMIT_IN_FLIGHT] = { "in-flight", KIND_COUNT, 32, MAX_COUNT },
    [AL_LIMIT_CONTINUATION_BYTES] = { "continuation", KIND_SIZE, 32u << 20, MAX_PAYLOAD },
};

uint64_t al_limit_default(enum al_limit which)
{
    if ((unsigned)which >= AL_LIMIT_COUNT_) {
        return 0;
    }
    return limit_table[which].def;
}

const char *al_limit_name(enum al_limit which)
{
    if ((unsigned)which >= AL_LIMIT_COUNT_) {
        return NULL;
    }
    return limit_table[which].name;
}

enum al_code limits_check(enum al_limit which, uint64_t value)
{
    if ((unsigned)which >= AL_LIMIT_COUNT_ || value == 0 || value > limit_table[which].max) {
        return AL_CONFIG_ERROR;
    }
    return AL_OK;
}

static int parse_u64(const char *s, size_t len, uint64_t *ret)
{
    uint64_t v = 0;
    if (len == 0) {
        return -1;
    }
    for (size_t i = 0; i < len; i++) {
        if (!isdigit((unsigned char)s[i])) {
            return -1;
        }
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10) {
            return -1;
        }
        v = v * 10 + d;
    }
    *ret = v;
    return 0;
}

static int scale(uint64_t v, uint64_t mul, uint64_t *ret)
{
    if (mul && v > UINT64_MAX / mul) {
        return -1;
    }
    *ret = v * mul;
    return 0;
}

enum al_code al_limit_parse(const char *key_value, enum al_limit *ret_which, uint64_t *ret_value,
                            struct al_error *reterr)
{
    if (!key_value) {
        return error_set(reterr, AL_CONFIG_ERROR, "limit: expected KEY=VALUE");
    }
    const char *eq = strchr(key_value, '=');
    if (!eq) {
        return error_set(reterr, AL_CONFIG_ERROR, "limit '%s': expected KEY=VALUE", key_value);
    }
    size_t klen = (size_t)(eq - key_value);
    int which = -1;
    for (int i = 0; i < AL_LIMIT_COUNT_; i++) {
        if (strlen(limit_table[i].name) == klen &&
            memcmp(limit_table[i].name, key_value, klen) == 0) {
            which = i;
        }
    }
    if (which < 0) {
        return error_set(
                reterr, AL_CONFIG_ERROR,
                "unknown limit '%.*s' (known: timeout, cpu, memory, stack, source, "
                "result, console, host-args, host-output, host-calls, in-flight, continuation)",
                (int)klen, key_value);
    }
    const char *val = eq + 1;
    size_t vlen = strlen(val);
    size_t digits = 0;
    while (digits < vlen && isdigit((unsigned char)val[digits])) {
        digits++;
    }
    const char *unit = val + digits;
    uint64_t n = 0;
    uint64_t mul = 0;
    if (parse_u64(val, digits, &n) != 0) {
        goto bad;
    }
    switch (limit_table[which].kind) {
    case KIND_DURATION:
        if (strcmp(unit, "") == 0 || strcmp(unit, "ms") == 0) {
            mul = 1;
        } else if (strcmp(unit, "s") == 0) {
            mul = 1000;
        }
        break;
    case KIND_SIZE:
        if (strcmp(unit, "") == 0 || strcmp(unit, "B") == 0) {
            mul = 1;
        } else if (strcmp(unit, "K") == 0 || strcmp(unit, "k") == 0 || strcmp(unit, "KiB") == 0) {
            mul = 1ull << 10;
        } else if (strcmp(unit, "M") == 0 || strcmp(unit, "MiB") == 0) {
            mul = 1ull << 20;
        } else if (strcmp(unit, "G") == 0 || strcmp(unit, "GiB") == 0) {
            mul = 1ull << 30;
        }
        break;
    case KIND_COUNT:
        if (strcmp(unit, "") == 0) {
            mul = 1;
        }
        break;
    }
    uint64_t v;
    if (mul == 0 || scale(n, mul, &v) != 0) {
        goto bad;
    }
    if (limits_check((enum al_limit)which, v) != AL_OK) {
        return error_set(reterr, AL_CONFIG_ERROR, "limit %s=%s is out of range (1 to %llu%s)",
                         limit_table[which].name, val, (unsigned long long)limit_table[which].max,
                         limit_table[which].kind == KIND_DURATION ? " ms"
                         : limit_table[which].kind == KIND_SIZE   ? " bytes"
                                                                  : "");
    }
    *ret_which = (enum al_limit)which;
    *ret_value = v;
    return AL_OK;
bad:
    return error_set(reterr, AL_CONFIG_ERROR, "limit %s: cannot parse '%s' as %s",
                     limit_table[which].name, val,
                     limit_table[which].kind == KIND_DURATION ? "a duration (e.g. 500ms, 2s)"
                     : limit_table[which].kind == KIND_SIZE   ? "a size (e.g. 4096, 64K, 16M, 1G)"
                                                              : "a count");
}
