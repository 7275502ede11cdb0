/*
 * cmd_run.c - `airlock run [OPTIONS] FILE`: run one file with the host functions given on the
 * command line and print the result, readably or as one JSON object (--json). This contract is
 * relied on by other tools: the option names, the JSON shape and the exit statuses are stable.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "cli.h"
#include "json.h"
#include "suggest.h"
#include "term.h"

#define CLI_SEEDED_CLOCK_MS 1735689600000LL /* 2025-01-01T00:00:00Z */

static const char usage[] =
        "usage: airlock run [OPTIONS] FILE        FILE \"-\" = stdin; options may also follow "
        "FILE\n"
        "  --host NAME=exec:COMMAND   host function NAME (\"group.fn\"); each call runs COMMAND "
        "via /bin/sh -c\n"
        "                             with env AIRLOCK_FUNCTION=NAME and the argument array "
        "(boundary JSON,\n"
        "                             one line) on stdin; exit 0: stdout is the result (empty = "
        "undefined);\n"
        "                             exit 75: the call interrupts the run, stdout is the payload; "
        "other:\n"
        "                             the call throws an Error whose message is stderr's text, "
        "trimmed\n"
        "  --host-process COMMAND     one co-process per run serving many functions over JSON "
        "lines. Its\n"
        "                             first line declares "
        "{\"functions\":[\"group.fn\",...],\"sync\":[\"group\"]}\n"
        "                             (\"sync\" optional); then airlock writes one line per call,\n"
        "                             {\"id\":N,\"function\":\"group.fn\",\"args\":[...]}, and the "
        "co-process\n"
        "                             answers one line each, {\"id\":N,\"result\":V}, "
        "{\"id\":N,\"error\":\"message\"}\n"
        "                             or {\"id\":N,\"interrupt\":PAYLOAD}, in any order, at any "
        "time. Its stderr\n"
        "                             passes through. At the end of the run airlock closes its "
        "stdin and\n"
        "                             reaps it (killing it after a short grace)\n"
        "  --limit KEY=VALUE          timeout, cpu (durations: ms or s), memory, stack, source, "
        "result,\n"
        "                             console, host-args, host-output, continuation (sizes: bytes "
        "or\n"
        "                             K/M/G), host-calls, in-flight (counts)\n"
        "  --seed HEX                 determinism seed for Date and Math.random (the guest clock "
        "then\n"
        "                             starts at 2025-01-01T00:00:00Z unless --clock is given, and\n"
        "                             each host answer moves it by exactly 1 ms)\n"
        "  --clock MS                 start of the guest clock, ms since the epoch\n"
        "  --lang js|ts               the source language (default: ts for a .ts or .mts FILE); "
        "modules\n"
        "                             whose name ends in .ts are TypeScript too\n"
        "  --module                   FILE is an ES module: its default export is the value (also "
        "for a\n"
        "                             .mjs FILE)\n"
        "  --modules DIR              imports resolve inside DIR only (a read-only module root)\n"
        "  --workspace DIR            the guest's `workspace` and node:fs/promises over DIR, "
        "read-only\n"
        "                             (symbolic links answer EACCES) except under "
        "--workspace-output\n"
        "  --workspace-output PREFIX  a writable prefix of the workspace (repeatable); what the "
        "guest\n"
        "                             writes there is written into DIR once the run completed\n"
        "  --unsafe-no-jail           run without the worker's seccomp filter (stats.jail says "
        "\"none\")\n"
        "  --json                     print one JSON object on one line on stdout:\n"
        "    {\"status\":\"completed\",\"value\":V,\"console\":[{\"level\":\"log\",\"text\":\"...\""
        "}],\"stats\":{...}}\n"
        "    {\"status\":\"failed\",\"error\":{\"code\":\"TIMEOUT\",\"name\":\"...\",\"message\":\""
        "...\",\"stack\":\"...\"},\n"
        "     \"console\":[...],\"stats\":{...}}\n"
        "    {\"status\":\"interrupted\",\"interruptions\":[{\"id\":\"...\",\"function\":\"group.fn"
        "\",\"args\":[...],\n"
        "     \"payload\":P}],\"continuation\":\"...\",\"console\":[...],\"stats\":{...}}\n"
        "    stats: {\"wall_ms\":...,\"cpu_ms\":...,\"peak_memory_bytes\":...,\"host_calls\":...,\""
        "seed\":\"...\",\n"
        "     \"clock_ms\":...,\"jail\":\"seccomp\"}\n"
        "  --resume TOKEN|@FILE       resume from a continuation (same FILE and host setup)\n"
        "  --resolve ID=JSON          a resolution (repeatable); JSON is a boundary-format value\n"
        "  --context JSON             application context the continuation is bound to\n"
        "  --audience NAME            audience the continuation is bound to (default \"airlock\")\n"
        "  --continuation-ttl DUR     lifetime of new continuations (90s, 30m, 1h, 7d; default "
        "1h)\n"
        "  --store DIR                use the file-backed stored form in DIR (continuations become "
        "ids)\n"
        "  --help                     show this help\n"
        "environment: AIRLOCK_CONTINUATION_SECRET (at least 32 bytes) signs and checks "
        "continuations; it\n"
        "  is needed only to interrupt or resume. AIRLOCK_CONTINUATION_PREVIOUS_SECRET is an older "
        "one\n"
        "  still accepted. No AIRLOCK_CONTINUATION_* variable reaches a host command or "
        "co-process. A\n"
        "  re-invoked interrupted call gets AIRLOCK_RESUME={\"interruptionId\":...,\"payload\":...,"
        "\n"
        "  \"resolution\":...} (a co-process: the request's \"resume\" member)\n"
        "without --json: the value is printed as indented JSON on stdout; console lines, a failure "
        "or\n"
        "  the interruptions (then the continuation alone goes to stdout) on stderr, with control\n"
        "  characters escaped (\\x1b, \\u009b)\n"
        "exit status: 0 completed, 1 failed, 2 usage or configuration error (CONFIG_ERROR), 3 "
        "interrupted\n";

struct run_args {
    const char *file;
    const char *host_process;
    int json;
    int has_seed;
    uint64_t seed;
    int has_clock;
    int64_t clock_ms;
    int no_jail;
    uint64_t limits[AL_LIMIT_COUNT_];
    uint8_t limit_set[AL_LIMIT_COUNT_];
    const char **host_specs; /* --host NAME=exec:COMMAND, in order */
    size_t nhost_specs;
    struct exec_host **execs;
    size_t nexecs;
    const char *resume; /* TOKEN or @FILE */
    const char *context;
    const char *audience;
    const char *store;
    const char *modules;   /* --modules DIR */
    int module;            /* --module */
    char lang;             /* --lang: 'j' or 't'; 0: by the file name */
    uint64_t ttl_ms;       /* 0: the default */
    const char **resolves; /* ID=JSON */
    size_t nresolves;
    const char *workspace;   /* --workspace DIR */
    const char **ws_outputs; /* --workspace-output PREFIX, in order */
    size_t nws_outputs;
};

/* Reads the whole file (or stdin) but never more than max + 1 bytes: enough to tell the
 * run it is too large without reading an unbounded input. */
static char *read_source(const char *path, size_t max, size_t *ret_len)
{
    int fd = strcmp(path, "-") == 0 ? 0 : open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        cli_error("cannot read %s: %s", path, strerror(errno));
        return NULL;
    }
    struct buf b;
    buf_init(&b, max + 1);
    for (;;) {
        enum buf_status st;
        size_t want = b.len + 65536 > max + 1 ? max + 1 - b.len : 65536;
        if (want == 0) {
            break;
        }
        char *p = buf_reserve(&b, want, &st);
        if (!p) {
            cli_error("out of memory reading %s", path);
            goto fail;
        }
        ssize_t n = read(fd, p, want);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            cli_error("cannot read %s: %s", path, strerror(errno));
            goto fail;
        }
        if (n == 0) {
            break;
        }
        buf_commit(&b, (size_t)n);
    }
    if (fd != 0) {
        close(fd);
    }
    *ret_len = b.len;
    return b.data ? buf_steal(&b, NULL) : strdup("");
fail:
    if (fd != 0) {
        close(fd);
    }
    buf_done(&b);
    return NULL;
}

static int parse_seed(const char *s, uint64_t *ret)
{
    size_t n = strlen(s);
    if (n == 0 || n > 16) {
        return -1;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        unsigned d;
        if (c >= '0' && c <= '9') {
            d = (unsigned)(c - '0');
        } else if (c >= 'a' && c <= 'f') {
            d = (unsigned)(c - 'a' + 10);
        } else if (c >= 'A' && c <= 'F') {
            d = (unsigned)(c - 'A' + 10);
        } else {
            return -1;
        }
        v = v << 4 | d;
    }
    *ret = v;
    return 0;
}

/* A duration: digits and a unit ms, s, m, h or d (plain digits: ms). 0 when malformed. */
static uint64_t parse_duration(const char *s)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || v == 0 || *s == '-') {
        return 0;
    }
    static const struct {
        const char *unit;
        uint64_t ms;
    } units[] = { { "", 1 },      { "ms", 1 },      { "s", 1000 },
                  { "m", 60000 }, { "h", 3600000 }, { "d", 86400000 } };
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(end, units[i].unit) == 0) {
            return v > UINT64_MAX / units[i].ms ? 0 : v * units[i].ms;
        }
    }
    return 0;
}

static const struct option run_options[] = {
    { "host", required_argument, NULL, 'H' },
    { "host-process", required_argument, NULL, 'P' },
    { "limit", required_argument, NULL, 'L' },
    { "seed", required_argument, NULL, 'S' },
    { "clock", required_argument, NULL, 'C' },
    { "json", no_argument, NULL, 'J' },
    { "unsafe-no-jail", no_argument, NULL, 'U' },
    { "resume", required_argument, NULL, 'R' },
    { "resolve", required_argument, NULL, 'V' },
    { "context", required_argument, NULL, 'X' },
    { "audience", required_argument, NULL, 'A' },
    { "continuation-ttl", required_argument, NULL, 'T' },
    { "store", required_argument, NULL, 'D' },
    { "module", no_argument, NULL, 'M' },
    { "lang", required_argument, NULL, 'G' },
    { "modules", required_argument, NULL, 'O' },
    { "workspace", required_argument, NULL, 'W' },
    { "workspace-output", required_argument, NULL, 'Y' },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
};

#define RUN_NOPTIONS (sizeof run_options / sizeof run_options[0] - 1)

/* What getopt refused: an unknown option (naming the closest real one), an ambiguous
 * abbreviation, or an option without its value. The first line says it all. */
static void bad_option(const char *arg, int missing_value)
{
    const char *names[RUN_NOPTIONS];
    const char *matches[RUN_NOPTIONS];
    size_t nmatches = 0;
    if (missing_value) {
        cli_error("run: option '%s' needs a value (see `airlock run --help`)", arg);
        return;
    }
    if (strncmp(arg, "--", 2) != 0) {
        cli_error("run: unknown option '%s'\nusage: airlock run [OPTIONS] FILE (see `airlock run "
                  "--help`)",
                  arg);
        return;
    }
    const char *name = arg + 2;
    const char *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    for (size_t i = 0; i < RUN_NOPTIONS; i++) {
        names[i] = run_options[i].name;
        if (strlen(run_options[i].name) == len && strncmp(run_options[i].name, name, len) == 0) {
            cli_error("run: option '--%s' takes no value", run_options[i].name);
            return;
        }
        if (len > 0 && strncmp(run_options[i].name, name, len) == 0) {
            matches[nmatches++] = run_options[i].name;
        }
    }
    if (nmatches > 1) {
        struct buf b;
        buf_init(&b, 1024);
        for (size_t i = 0; i < nmatches; i++) {
            buf_printf(&b, "%s'--%s'", i ? ", " : "", matches[i]);
        }
        cli_error("run: ambiguous option '--%.*s' (%s)", (int)len, name, b.data ? b.data : "");
        buf_done(&b);
        return;
    }
    const char *best = suggest_closest(name, len, names, RUN_NOPTIONS);
    if (best) {
        cli_error("run: unknown option '--%.*s'; did you mean '--%s'?\nusage: airlock run "
                  "[OPTIONS] FILE (see `airlock run --help`)",
                  (int)len, name, best);
    } else {
        cli_error("run: unknown option '--%.*s'\nusage: airlock run [OPTIONS] FILE (see `airlock "
                  "run --help`)",
                  (int)len, name);
    }
}

/* Options may come before or after FILE (getopt permutes; "--" ends them). */
static int parse_args(int argc, char **argv, struct run_args *a)
{
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", run_options, NULL)) != -1) {
        switch (c) {
        case 'H': {
            /* validated against the config later; here only the shape NAME=exec:COMMAND */
            const char *eq = strchr(optarg, '=');
            if (!eq || strncmp(eq + 1, "exec:", 5) != 0 || eq[6] == '\0') {
                cli_error("--host %s: expected NAME=exec:COMMAND", optarg);
                return -1;
            }
            const char **v = realloc(a->host_specs, (a->nhost_specs + 1) * sizeof *v);
            if (!v) {
                cli_error("out of memory");
                return -1;
            }
            a->host_specs = v;
            a->host_specs[a->nhost_specs++] = optarg;
            break;
        }
        case 'P':
            if (a->host_process) {
                cli_error("--host-process may be given once");
                return -1;
            }
            a->host_process = optarg;
            break;
        case 'L': {
            enum al_limit which;
            uint64_t v;
            struct al_error err;
            if (al_limit_parse(optarg, &which, &v, &err) != AL_OK) {
                cli_error("--limit: %s", err.message);
                return -1;
            }
            a->limits[which] = v;
            a->limit_set[which] = 1;
            break;
        }
        case 'S':
            if (parse_seed(optarg, &a->seed) != 0) {
                cli_error("--seed %s: expected 1 to 16 hex digits", optarg);
                return -1;
            }
            a->has_seed = 1;
            break;
        case 'C': {
            char *end = NULL;
            errno = 0;
            long long v = strtoll(optarg, &end, 10);
            if (errno || !end || *end != '\0' || end == optarg || v < 0 || v > 8640000000000000LL) {
                cli_error("--clock %s: expected milliseconds since the epoch", optarg);
                return -1;
            }
            a->clock_ms = (int64_t)v;
            a->has_clock = 1;
            break;
        }
        case 'J':
            a->json = 1;
            break;
        case 'U':
            a->no_jail = 1;
            break;
        case 'R':
            a->resume = optarg;
            break;
        case 'V': {
            const char *eq = strchr(optarg, '=');
            if (!eq || eq == optarg || eq[1] == '\0') {
                cli_error("--resolve %s: expected ID=JSON", optarg);
                return -1;
            }
            const char **v = realloc(a->resolves, (a->nresolves + 1) * sizeof *v);
            if (!v) {
                cli_error("out of memory");
                return -1;
            }
            a->resolves = v;
            a->resolves[a->nresolves++] = optarg;
            break;
        }
        case 'X': {
            struct json_doc *doc = NULL;
            struct al_error err;
            if (json_parse(optarg, strlen(optarg), 256, &doc, &err) != AL_OK) {
                cli_error("--context: not JSON (%s)", err.message);
                return -1;
            }
            json_doc_free(doc);
            a->context = optarg;
            break;
        }
        case 'A':
            if (*optarg == '\0' || strlen(optarg) > 255) {
                cli_error("--audience: expected 1 to 255 bytes");
                return -1;
            }
            a->audience = optarg;
            break;
        case 'T':
            a->ttl_ms = parse_duration(optarg);
            if (a->ttl_ms == 0) {
                cli_error("--continuation-ttl %s: expected a duration such as 90s, 30m, 1h, 7d",
                          optarg);
                return -1;
            }
            break;
        case 'D':
            a->store = optarg;
            break;
        case 'M':
            a->module = 1;
            break;
        case 'G':
            if (strcmp(optarg, "ts") != 0 && strcmp(optarg, "js") != 0) {
                cli_error("--lang %s: expected js or ts", optarg);
                return -1;
            }
            a->lang = optarg[0];
            break;
        case 'O':
            a->modules = optarg;
            break;
        case 'W':
            a->workspace = optarg;
            break;
        case 'Y': {
            const char **v = realloc(a->ws_outputs, (a->nws_outputs + 1) * sizeof *v);
            if (!v) {
                cli_error("out of memory");
                return -1;
            }
            a->ws_outputs = v;
            a->ws_outputs[a->nws_outputs++] = optarg;
            break;
        }
        case 'h':
            fputs(usage, stdout);
            exit(0);
        case ':':
            bad_option(argv[optind - 1], 1);
            return -1;
        default:
            if (strncmp(argv[optind - 1], "--", 2) == 0) {
                bad_option(argv[optind - 1], 0);
            } else {
                char opt[3] = { '-', (char)optopt, '\0' };
                bad_option(opt, 0);
            }
            return -1;
        }
    }
    if (optind != argc - 1) {
        cli_error("run: %s\nusage: airlock run [OPTIONS] FILE (see `airlock run --help`)",
                  optind == argc ? "expected a FILE" : "expected exactly one FILE");
        return -1;
    }
    a->file = argv[optind];
    return 0;
}

static int add_exec_hosts(struct run_args *a, struct al_config *config, uint64_t output_limit)
{
    for (size_t i = 0; i < a->nhost_specs; i++) {
        const char *spec = a->host_specs[i];
        const char *eq = strchr(spec, '=');
        char name[256];
        size_t nlen = (size_t)(eq - spec);
        if (nlen >= sizeof name) {
            cli_error("--host %s: name too long", spec);
            return -1;
        }
        memcpy(name, spec, nlen);
        name[nlen] = '\0';
        struct exec_host *h = exec_host_new(eq + 6, (size_t)output_limit);
        if (!h) {
            cli_error("out of memory");
            return -1;
        }
        struct exec_host **v = realloc(a->execs, (a->nexecs + 1) * sizeof *v);
        if (!v) {
            exec_host_free(h);
            cli_error("out of memory");
            return -1;
        }
        a->execs = v;
        a->execs[a->nexecs++] = h;
        if (al_config_add_host(config, name, exec_host_call, h, 0) != AL_OK) {
            cli_error("--host %s: invalid or duplicate host function name '%s' (expected "
                      "group.fn with identifier parts, not a builtin global or a reserved member)",
                      spec, name);
            return -1;
        }
    }
    return 0;
}

static void put_json_string(struct buf *b, const char *s)
{
    json_write_string(b, s, strlen(s));
}

/* One JSON object on one line. `override` (the co-process broke down: the command exits 2)
 * replaces the run's own outcome with a failure whose code is CONFIG_ERROR, so the object
 * never says "completed" when the exit status says otherwise. */
static void print_json(const struct al_result *res, const char *override)
{
    struct buf b;
    buf_init(&b, SIZE_MAX / 2);
    struct al_stats stats;
    al_result_stats(res, &stats);
    if (override) {
        buf_append_str(&b, "{\"status\":\"failed\",\"error\":{\"code\":");
        put_json_string(&b, al_code_name(AL_CONFIG_ERROR));
        buf_append_str(&b, ",\"name\":\"\",\"message\":");
        put_json_string(&b, override);
        buf_append_str(&b, ",\"stack\":\"\"}");
    } else if (al_result_status(res) == AL_STATUS_COMPLETED) {
        size_t vlen;
        const char *v = al_result_value(res, &vlen);
        buf_append_str(&b, "{\"status\":\"completed\",\"value\":");
        json_write_compact(&b, v, vlen);
    } else if (al_result_status(res) == AL_STATUS_INTERRUPTED) {
        buf_append_str(&b, "{\"status\":\"interrupted\",\"interruptions\":[");
        for (size_t i = 0; i < al_result_interruption_count(res); i++) {
            struct al_interruption in;
            (void)al_result_interruption(res, i, &in);
            buf_append_str(&b, i ? ",{\"id\":" : "{\"id\":");
            put_json_string(&b, in.id);
            buf_append_str(&b, ",\"function\":");
            put_json_string(&b, in.function);
            buf_append_str(&b, ",\"args\":");
            json_write_compact(&b, in.args, strlen(in.args));
            buf_append_str(&b, ",\"payload\":");
            json_write_compact(&b, in.payload, strlen(in.payload));
            buf_append_str(&b, "}");
        }
        buf_append_str(&b, "],\"continuation\":");
        put_json_string(&b, al_result_continuation(res, NULL));
    } else {
        buf_append_str(&b, "{\"status\":\"failed\",\"error\":{\"code\":");
        put_json_string(&b, al_code_name(al_result_error_code(res)));
        buf_append_str(&b, ",\"name\":");
        struct al_error_text et; /* with lengths: a guest's message may hold NUL */
        al_result_error_text(res, &et);
        json_write_string(&b, et.name, et.name_len);
        buf_append_str(&b, ",\"message\":");
        json_write_string(&b, et.message, et.message_len);
        buf_append_str(&b, ",\"stack\":");
        json_write_string(&b, et.stack, et.stack_len);
        buf_append_str(&b, "}");
    }
    buf_append_str(&b, ",\"console\":[");
    for (size_t i = 0; i < al_result_console_count(res); i++) {
        enum al_console_level level;
        size_t len;
        const char *text = al_result_console_text(res, i, &level, &len);
        buf_append_str(&b, i ? ",{\"level\":" : "{\"level\":");
        put_json_string(&b, al_console_level_name(level));
        buf_append_str(&b, ",\"text\":");
        json_write_string(&b, text, len);
        buf_append_str(&b, "}");
    }
    buf_printf(&b,
               "],\"stats\":{\"wall_ms\":%.3f,\"cpu_ms\":%.3f,\"peak_memory_bytes\":%" PRIu64
               ",\"host_calls\":%" PRIu32 ",\"seed\":\"%016" PRIx64 "\",\"clock_ms\":%" PRId64
               ",\"jail\":\"%s\"}}\n",
               (double)stats.wall_us / 1000.0, (double)stats.cpu_us / 1000.0,
               stats.peak_memory_bytes, stats.host_calls, stats.seed, stats.clock_ms,
               stats.jailed ? "seccomp" : "none");
    fwrite(b.data, 1, b.len, stdout);
    buf_done(&b);
}

static void term_puts(FILE *f, const char *s)
{
    term_write(f, s, strlen(s));
}

/* Everything the guest or a host wrote is shown through term.c: a guest must not be able to
 * fake or hide what airlock prints (the interruptions to decide, a failure). */
static void print_readable(const struct al_result *res)
{
    for (size_t i = 0; i < al_result_console_count(res); i++) {
        enum al_console_level level;
        size_t len;
        const char *text = al_result_console_text(res, i, &level, &len);
        if (level == AL_CONSOLE_WARN || level == AL_CONSOLE_ERROR) {
            fprintf(stderr, "%s: ", al_console_level_name(level));
        }
        term_write(stderr, text, len);
        fputc('\n', stderr);
    }
    if (al_result_status(res) == AL_STATUS_COMPLETED) {
        size_t vlen;
        const char *v = al_result_value(res, &vlen);
        if (term_write_pretty(stdout, v, vlen) != 0) {
            cli_error("out of memory printing the value");
        }
        return;
    }
    if (al_result_status(res) == AL_STATUS_INTERRUPTED) {
        /* The continuation alone on stdout, so `airlock run ... > cont` keeps it. */
        size_t n = al_result_interruption_count(res);
        fprintf(stderr, "airlock: interrupted: %zu decision%s needed\n", n, n == 1 ? "" : "s");
        for (size_t i = 0; i < n; i++) {
            struct al_interruption in;
            (void)al_result_interruption(res, i, &in);
            fprintf(stderr, "  %s  ", in.id);
            term_puts(stderr, in.function);
            fputc('(', stderr);
            term_write_json(stderr, in.args, strlen(in.args));
            fputs(")\n    payload: ", stderr);
            term_write_json(stderr, in.payload, strlen(in.payload));
            fputc('\n', stderr);
        }
        fprintf(stderr, "resume with: --resume TOKEN|@FILE --resolve ID=JSON ...\n");
        printf("%s\n", al_result_continuation(res, NULL));
        return;
    }
    struct al_error_text et;
    al_result_error_text(res, &et);
    fprintf(stderr, "airlock: %s: ", al_code_name(al_result_error_code(res)));
    term_write(stderr, et.name, et.name_len);
    fputs(et.name_len ? ": " : "", stderr);
    term_write(stderr, et.message, et.message_len);
    fputc('\n', stderr);
    if (et.stack_len) {
        term_write(stderr, et.stack, et.stack_len);
        fputc('\n', stderr);
    }
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s);
    size_t k = strlen(suffix);
    return n > k && strcmp(s + n - k, suffix) == 0;
}

/* --module / .mjs / .mts: a module; --lang ts / .ts / .mts: TypeScript. */
static unsigned source_type_of(const struct run_args *a)
{
    unsigned type = AL_SOURCE_BODY;
    if (a->module || ends_with(a->file, ".mjs") || ends_with(a->file, ".mts")) {
        type = AL_SOURCE_MODULE;
    }
    if (a->lang ? a->lang == 't' : ends_with(a->file, ".ts") || ends_with(a->file, ".mts")) {
        type |= AL_SOURCE_TYPESCRIPT;
    }
    return type;
}

/* The continuation key (from the environment), its lifetime and the store. */
static int setup_continuations(const struct run_args *a, struct al_config *config,
                               struct al_store **ret_store)
{
    const char *secret = getenv("AIRLOCK_CONTINUATION_SECRET");
    const char *previous = getenv("AIRLOCK_CONTINUATION_PREVIOUS_SECRET");
    if (secret && *secret) {
        if (strlen(secret) < AL_CONTINUATION_KEY_MIN) {
            cli_error("CONFIG_ERROR: AIRLOCK_CONTINUATION_SECRET must be at least %d bytes",
                      AL_CONTINUATION_KEY_MIN);
            return -1;
        }
        if (al_config_set_continuation_key(config, secret, strlen(secret)) != AL_OK) {
            cli_error("out of memory");
            return -1;
        }
        if (previous && *previous &&
            al_config_add_verification_key(config, previous, strlen(previous)) != AL_OK) {
            cli_error("CONFIG_ERROR: AIRLOCK_CONTINUATION_PREVIOUS_SECRET must be at least %d "
                      "bytes",
                      AL_CONTINUATION_KEY_MIN);
            return -1;
        }
    }
    if (a->ttl_ms && al_config_set_continuation_ttl(config, a->ttl_ms) != AL_OK) {
        cli_error("--continuation-ttl: at most one year");
        return -1;
    }
    if (a->store) {
        struct al_error err;
        if (al_store_file_new(a->store, ret_store, &err) != AL_OK) {
            cli_error("--store: %s", err.message);
            return -1;
        }
        al_config_set_store(config, *ret_store);
    }
    return 0;
}

/* --resume, --resolve, --context, --audience onto the run's options. */
static int setup_resume(const struct run_args *a, struct al_run_opts *opts, size_t max_token)
{
    if (a->context && al_run_opts_set_context(opts, a->context, strlen(a->context)) != AL_OK) {
        cli_error("out of memory");
        return -1;
    }
    if (a->audience && al_run_opts_set_audience(opts, a->audience) != AL_OK) {
        cli_error("--audience: at most 255 bytes");
        return -1;
    }
    if (a->nresolves && !a->resume) {
        cli_error("--resolve needs --resume");
        return -1;
    }
    if (!a->resume) {
        return 0;
    }
    char *token = NULL;
    size_t len = 0;
    if (a->resume[0] == '@') {
        token = read_source(a->resume + 1, max_token, &len);
        if (!token) {
            return -1;
        }
        while (len > 0 &&
               (token[len - 1] == '\n' || token[len - 1] == '\r' || token[len - 1] == ' ')) {
            token[--len] = '\0';
        }
    } else {
        token = strdup(a->resume);
        len = token ? strlen(token) : 0;
    }
    if (!token || len == 0) {
        cli_error("--resume: %s", token ? "empty continuation" : "out of memory");
        free(token);
        return -1;
    }
    int rc = al_run_opts_set_resume(opts, token, len) == AL_OK ? 0 : -1;
    free(token);
    for (size_t i = 0; rc == 0 && i < a->nresolves; i++) {
        const char *eq = strchr(a->resolves[i], '=');
        char id[128];
        size_t idlen = (size_t)(eq - a->resolves[i]);
        if (idlen >= sizeof id) {
            cli_error("--resolve: interruption id too long");
            return -1;
        }
        memcpy(id, a->resolves[i], idlen);
        id[idlen] = '\0';
        rc = al_run_opts_add_resolution(opts, id, eq + 1, strlen(eq + 1)) == AL_OK ? 0 : -1;
    }
    if (rc != 0) {
        cli_error("out of memory");
    }
    return rc;
}

/* SIGINT and SIGTERM cancel the run (al_run_cancel is async-signal-safe): it then ends failed,
 * ABORTED, its hosts reaped and its result printed as any other, and the command exits 130 or
 * 143 - instead of dying half-way with hosts still running. */
static struct al_run *volatile current_run;
static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
    got_signal = sig;
    struct al_run *run = current_run;
    if (run) {
        al_run_cancel(run);
    }
}

static int catch_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGINT, &sa, NULL) != 0 || sigaction(SIGTERM, &sa, NULL) != 0) {
        cli_error("sigaction: %s", strerror(errno));
        return -1;
    }
    return 0;
}

/* The run itself, blocking until it ends or a signal cancels it. The handle is never released:
 * a signal handled on another thread at the very end may still cancel it - a no-op once the
 * run is over, and safe only while the handle lives, which is until the command exits. */
static enum al_code execute(struct al_runner *runner, const struct al_run_opts *opts,
                            struct al_result **ret_res, struct al_error *reterr)
{
    struct al_run *run = NULL;
    enum al_code rc = al_run_start(runner, opts, NULL, NULL, &run, reterr);
    if (rc != AL_OK) {
        return rc;
    }
    current_run = run;
    if (got_signal) {
        al_run_cancel(run); /* a signal that came before the handler could see the run */
    }
    return al_run_wait(run, ret_res, reterr);
}

/* 0 completed, 3 interrupted, 1 failed - except CONFIG_ERROR (the command line or the setup
 * is wrong: an unknown interruption id, a missing secret, ...), which is 2 as for every other
 * usage or configuration error. */
static int exit_status_of(const struct al_result *res)
{
    switch (al_result_status(res)) {
    case AL_STATUS_COMPLETED:
        return CLI_EXIT_COMPLETED;
    case AL_STATUS_INTERRUPTED:
        return CLI_EXIT_INTERRUPTED;
    default:
        return al_result_error_code(res) == AL_CONFIG_ERROR ? CLI_EXIT_USAGE : CLI_EXIT_FAILED;
    }
}

/* --workspace DIR: the directory as the whole workspace (a local mount at its root), writable
 * under the --workspace-output prefixes only. 0, or -1 (said). */
static int setup_workspace(const struct run_args *a, struct al_workspace **ret)
{
    if (!a->workspace) {
        if (a->nws_outputs) {
            cli_error("--workspace-output needs --workspace DIR");
            return -1;
        }
        return 0;
    }
    struct buf m;
    buf_init(&m, 1 << 20);
    buf_append_str(&m, "{\"version\":1,\"entries\":{\".\":{\"type\":\"local_dir\",\"mount\":"
                       "\"dir\",\"read_only\":false}},\"outputs\":[");
    for (size_t i = 0; i < a->nws_outputs; i++) {
        if (i) {
            buf_append_byte(&m, ',');
        }
        json_write_string(&m, a->ws_outputs[i], strlen(a->ws_outputs[i]));
    }
    buf_append_str(&m, "]}");
    struct al_error err;
    struct al_workspace *ws = NULL;
    if (buf_failed(&m) || al_workspace_new(m.data, m.len, &ws, &err) != AL_OK) {
        cli_error("--workspace: %s", buf_failed(&m) ? "out of memory" : err.message);
        buf_done(&m);
        return -1;
    }
    buf_done(&m);
    if (al_workspace_set_mount_local(ws, "dir", a->workspace) != AL_OK) {
        cli_error("--workspace %s: not a directory", a->workspace);
        al_workspace_free(ws);
        return -1;
    }
    *ret = ws;
    return 0;
}

int cmd_run(int argc, char **argv)
{
    int exit_code = CLI_EXIT_USAGE;
    struct run_args a;
    struct al_config *config = NULL;
    struct al_runner *runner = NULL;
    struct al_run_opts *opts = NULL;
    struct al_result *res = NULL;
    struct host_process *hp = NULL;
    struct al_store *store = NULL;
    struct modules_dir *mods = NULL;
    struct al_workspace *ws = NULL;
    char *source = NULL;
    size_t source_len = 0;
    struct al_error err;
    memset(&a, 0, sizeof a);

    if (parse_args(argc, argv, &a) != 0 || catch_signals() != 0) {
        goto out;
    }
    config = al_config_new();
    opts = al_run_opts_new();
    if (!config || !opts) {
        cli_error("out of memory");
        goto out;
    }
    uint64_t limits[AL_LIMIT_COUNT_];
    for (int i = 0; i < AL_LIMIT_COUNT_; i++) {
        limits[i] = a.limit_set[i] ? a.limits[i] : al_limit_default((enum al_limit)i);
        if (a.limit_set[i] && al_config_set_limit(config, (enum al_limit)i, a.limits[i]) != AL_OK) {
            cli_error("invalid limit %s", al_limit_name((enum al_limit)i));
            goto out;
        }
    }
    source = read_source(a.file, (size_t)limits[AL_LIMIT_SOURCE_BYTES], &source_len);
    if (!source) {
        goto out;
    }
    if (add_exec_hosts(&a, config, limits[AL_LIMIT_HOST_OUTPUT_BYTES]) != 0) {
        goto out;
    }
    if (a.host_process) {
        hp = host_process_start(a.host_process, (unsigned)limits[AL_LIMIT_TIMEOUT_MS]);
        if (!hp || host_process_register(hp, config) != 0) {
            goto out;
        }
    }
    if (setup_continuations(&a, config, &store) != 0) {
        goto out;
    }
    if (a.modules) {
        mods = modules_dir_new(a.modules, (size_t)limits[AL_LIMIT_SOURCE_BYTES]);
        char identity[256];
        if (mods) {
            snprintf(identity, sizeof identity, "airlock-cli-dir:%.200s", modules_dir_root(mods));
        }
        if (!mods || al_config_set_module_loader(config, modules_dir_resolve, modules_dir_load,
                                                 mods, identity) != AL_OK) {
            goto out;
        }
    }
    /* One run per process: a worker started ahead would only be killed unused. */
    if (al_config_set_warm_workers(config, 0) != AL_OK ||
        al_config_set_unsafe_no_jail(config, a.no_jail) != AL_OK) {
        goto out;
    }
    if (al_runner_new(config, &runner, &err) != AL_OK) {
        cli_error("%s", err.message);
        goto out;
    }
    unsigned type = source_type_of(&a);
    if (al_run_opts_set_source(opts, source, source_len,
                               (type & AL_SOURCE_TYPESCRIPT) ? "run.ts" : "run.js") != AL_OK) {
        cli_error("out of memory");
        goto out;
    }
    if (a.has_seed) {
        al_run_opts_set_seed(opts, a.seed);
        /* A seeded run is reproducible as a whole: its clock starts at a fixed time and each
         * host answer moves it by exactly 1 ms, so it cannot time the host either. */
        al_run_opts_set_clock(opts, a.has_clock ? a.clock_ms : CLI_SEEDED_CLOCK_MS);
        if (al_run_opts_set_clock_mode(opts, AL_CLOCK_LOGICAL, 1) != AL_OK) {
            goto out;
        }
    } else if (a.has_clock) {
        al_run_opts_set_clock(opts, a.clock_ms);
    }
    if (setup_resume(&a, opts, (size_t)limits[AL_LIMIT_CONTINUATION_BYTES]) != 0) {
        goto out;
    }
    if (al_run_opts_set_source_type(opts, type) != AL_OK) {
        goto out;
    }
    if (setup_workspace(&a, &ws) != 0 || al_run_opts_set_workspace(opts, ws) != AL_OK) {
        goto out;
    }
    if (execute(runner, opts, &res, &err) != AL_OK) {
        cli_error("%s: %s", al_code_name(err.code), err.message);
        goto out;
    }
    exec_host_kill_all();
    const char *hp_error = hp ? host_process_finish(hp) : NULL;
    char hp_message[512];
    if (hp_error) {
        snprintf(hp_message, sizeof hp_message, "host process: %s", hp_error);
    }
    if (a.json) {
        print_json(res, hp_error ? hp_message : NULL);
    } else {
        print_readable(res);
    }
    fflush(stdout);
    exit_code = exit_status_of(res);
    if (ws && al_result_status(res) == AL_STATUS_COMPLETED &&
        al_workspace_commit(ws, &err) != AL_OK) {
        cli_error("--workspace: the outputs were not written: %s", err.message);
        exit_code = CLI_EXIT_FAILED;
    }
    if (hp_error) {
        cli_error("%s", hp_message);
        exit_code = CLI_EXIT_USAGE;
    }
    if (got_signal && al_result_error_code(res) == AL_ABORTED) {
        exit_code = 128 + got_signal; /* 130 for SIGINT, 143 for SIGTERM, as shells expect */
    }
out:
    exec_host_kill_all();
    if (hp) {
        host_process_finish(hp);
        host_process_free(hp);
    }
    al_result_free(res);
    al_run_opts_free(opts);
    al_runner_free(runner);
    al_config_free(config);
    al_store_free(store);
    modules_dir_free(mods);
    al_workspace_free(ws);
    free(a.ws_outputs);
    free(a.resolves);
    free(a.host_specs);
    for (size_t i = 0; i < a.nexecs; i++) {
        exec_host_free(a.execs[i]);
    }
    free(a.execs);
    free(source);
    return exit_code;
}
