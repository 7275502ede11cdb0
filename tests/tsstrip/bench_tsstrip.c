/*
 * bench_tsstrip.c - how long ts_strip() takes on typical TypeScript: a 10 KB source made of a
 * repeated chunk (interfaces, generics, classes with modifiers, arrows with return types, `as`,
 * template literals, regexes), stripped many times; prints the best and the median microseconds
 * per 10 KB. A measurement, not a test: the target is a few percent of a hello run (~0.1 ms).
 * Usage: bench_tsstrip [FILE]  (FILE: any TypeScript, measured per 10 KB instead)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tsstrip.h"

static const char chunk[] =
        "interface Order<T extends object = {}> {\n"
        "    id: string;\n"
        "    readonly lines: Array<{ sku: string; qty: number; price?: number }>;\n"
        "    meta?: Record<string, T>;\n"
        "}\n"
        "type Total = { net: number; tax: number } | null;\n"
        "export function total<T extends object>(o: Order<T>, rate: number = 0.2): Total {\n"
        "    const net: number = o.lines.reduce((s: number, l) => s + l.qty * (l.price ?? 0), 0);\n"
        "    if (net < 0 || !/^[A-Z]{3}-\\d+$/.test(o.id as string)) return null;\n"
        "    return { net, tax: net * rate } satisfies Total;\n"
        "}\n"
        "class Cache<K, V> implements Iterable<[K, V]> {\n"
        "    private readonly map = new Map<K, V>();\n"
        "    protected hits: number = 0;\n"
        "    constructor(readonly_size: number) { this.size = readonly_size; }\n"
        "    size!: number;\n"
        "    get(key: K): V | undefined { this.hits++; return this.map.get(key)!; }\n"
        "    set(key: K, value: V): this { this.map.set(key, value); return this; }\n"
        "    *[Symbol.iterator](): Iterator<[K, V]> { yield* this.map; }\n"
        "}\n"
        "const fmt = <T,>(xs: T[], sep: string = \", \"): string =>\n"
        "    xs.map((x: T, i: number) => `${i}: ${String(x as unknown)}`).join(sep);\n"
        "let ready = (a?: number) => (a ?? 0) > 1 ? fmt<number>([a as number]) : \"\";\n";

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a;
    double y = *(const double *)b;
    return x < y ? -1 : x > y ? 1 : 0;
}

static char *read_file(const char *path, size_t *ret_len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return NULL;
    }
    size_t cap = 1 << 16;
    size_t len = 0;
    char *buf = malloc(cap);
    while (buf != NULL) {
        if (len == cap) {
            cap *= 2;
            char *n = realloc(buf, cap);
            if (n == NULL) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = n;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        if (got == 0) {
            break;
        }
        len += got;
    }
    fclose(f);
    *ret_len = len;
    return buf;
}

int main(int argc, char **argv)
{
    size_t len = 0;
    char *src = NULL;
    if (argc > 1) {
        src = read_file(argv[1], &len);
        if (src == NULL) {
            fprintf(stderr, "bench_tsstrip: cannot read %s\n", argv[1]);
            return 1;
        }
    } else {
        size_t n = sizeof(chunk) - 1;
        size_t copies = (10240 + n - 1) / n;
        src = malloc(copies * n);
        if (src == NULL) {
            return 1;
        }
        for (size_t i = 0; i < copies; i++) {
            memcpy(src + len, chunk, n);
            len += n;
        }
    }
    char *out = NULL;
    size_t out_len = 0;
    struct ts_error err;
    if (ts_strip(src, len, &out, &out_len, &err) != 0) {
        fprintf(stderr, "bench_tsstrip: %s\n", err.message);
        free(src);
        return 1;
    }
    free(out);
    enum { ROUNDS = 31, REPS = 200 };
    double per[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        double t0 = now_us();
        for (int k = 0; k < REPS; k++) {
            if (ts_strip(src, len, &out, &out_len, &err) != 0) {
                free(src);
                return 1;
            }
            free(out);
        }
        per[r] = (now_us() - t0) / REPS * (10240.0 / (double)len);
    }
    qsort(per, ROUNDS, sizeof(double), cmp_double);
    printf("tsstrip: %.1f us per 10 KB (best %.1f; input %zu bytes, %d x %d runs)\n",
           per[ROUNDS / 2], per[0], len, ROUNDS, REPS);
    free(src);
    return 0;
}
