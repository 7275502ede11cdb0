/*
 * cmd_audit.c - `airlock audit verify FILE.jsonl [--public-key HEX] [--allow-unsealed] [--json]`:
 * checks an audit export offline (src/gov/audit.c does the checking; this file reads lines and
 * reports). Exit 0 when the whole export verifies, 1 at the first bad record (named by line,
 * seq and why), 2 for usage errors or an unreadable file. Without --public-key the checkpoints
 * are checked against the key they carry, and the report says the key was not pinned: anyone
 * able to rewrite the file could also have re-signed it with a key of their own.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "buf.h"
#include "cli.h"
#include "json.h"

static const char audit_usage[] =
        "usage: airlock audit verify FILE.jsonl [--public-key HEX] [--allow-unsealed] [--json]\n"
        "  checks an audit export (one record per line, docs/audit.md; FILE - reads stdin):\n"
        "  every record's hash, the prev links and seq order, every checkpoint's signature\n"
        "  --public-key HEX   the server's raw Ed25519 public key (64 hex digits); every\n"
        "                     checkpoint must carry it. Without it the key is not pinned.\n"
        "  --allow-unsealed   accept records after the last checkpoint (reported, not refused)\n"
        "  --json             print one JSON object: {\"ok\":true,\"records\":N,...} or\n"
        "                     {\"ok\":false,\"fault\":\"...\",\"seq\":N,\"line\":N,...}\n"
        "exit status: 0 verified, 1 verification failed, 2 usage error or unreadable file\n";

static void print_result(int json, const char *path, enum audit_fault f,
                         const struct audit_problem *p, const struct audit_summary *s)
{
    if (json) {
        struct buf b;
        buf_init(&b, 1 << 16);
        if (f == AUDIT_FAULT_NONE) {
            buf_printf(&b,
                       "{\"ok\":true,\"records\":%" PRIu64 ",\"checkpoints\":%" PRIu64
                       ",\"last_seq\":%" PRIu64 ",\"sealed_seq\":%" PRIu64
                       ",\"head\":\"%s\",\"public_key\":",
                       s->records, s->checkpoints, s->last_seq, s->sealed_seq, s->last_hash);
            if (s->key[0]) {
                buf_printf(&b, "\"%s\"", s->key);
            } else {
                buf_append_str(&b, "null");
            }
            buf_printf(&b, ",\"key_pinned\":%s}\n", s->key_pinned ? "true" : "false");
        } else {
            buf_append_str(&b, "{\"ok\":false,\"fault\":");
            json_write_string(&b, audit_fault_name(f), strlen(audit_fault_name(f)));
            buf_printf(&b, ",\"seq\":%" PRIu64 ",\"line\":%zu,\"why\":", p->seq, p->line);
            json_write_string(&b, p->why, strlen(p->why));
            buf_append_str(&b, "}\n");
        }
        if (b.data) {
            fwrite(b.data, 1, b.len, stdout);
        }
        buf_done(&b);
        return;
    }
    if (f != AUDIT_FAULT_NONE) {
        if (p->line > 0) {
            cli_error("audit verify: %s: line %zu, seq %" PRIu64 ": %s: %s", path, p->line, p->seq,
                      audit_fault_name(f), p->why);
        } else {
            cli_error("audit verify: %s: %s: %s", path, audit_fault_name(f), p->why);
        }
        return;
    }
    printf("%s: verified %" PRIu64 " records (seq 1..%" PRIu64 "), %" PRIu64
           " checkpoints, signed through seq %" PRIu64 "\n",
           path, s->records, s->last_seq, s->checkpoints, s->sealed_seq);
    if (s->sealed_seq + 1 < s->last_seq) {
        printf("warning: seq %" PRIu64 "..%" PRIu64 " come after the last checkpoint and are not "
               "signed\n",
               s->sealed_seq + 1, s->last_seq);
    }
    printf("head: %s\n", s->last_hash);
    if (s->key_pinned) {
        printf("key:  %s (pinned)\n", s->key);
    } else {
        printf("key:  %s (NOT pinned: pass --public-key to check who signed)\n",
               s->key[0] ? s->key : "none");
    }
}

static int audit_verify(int argc, char **argv)
{
    const char *path = NULL;
    char key[AUDIT_KEY_HEX_LEN + 1];
    int pinned = 0;
    int json = 0;
    unsigned flags = 0;
    int rc = CLI_EXIT_USAGE;
    FILE *f = NULL;
    char *line = NULL;
    size_t line_cap = 0;
    struct audit_verifier *v = NULL;
    struct audit_problem problem = { 0 };
    struct audit_summary summary;
    struct al_error err = { 0 };

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(audit_usage, stdout);
            rc = 0;
            goto out;
        }
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[i], "--allow-unsealed") == 0) {
            flags |= AUDIT_ALLOW_UNSEALED;
        } else if (strcmp(argv[i], "--public-key") == 0) {
            if (i + 1 >= argc || strlen(argv[i + 1]) != AUDIT_KEY_HEX_LEN) {
                cli_error("audit verify: --public-key needs 64 hex digits (a raw Ed25519 key)");
                goto out;
            }
            i++;
            for (size_t k = 0; k <= AUDIT_KEY_HEX_LEN; k++) {
                key[k] = (char)tolower((unsigned char)argv[i][k]);
            }
            pinned = 1;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            cli_error("audit verify: unknown option '%s' (see `airlock audit --help`)", argv[i]);
            goto out;
        } else if (path) {
            cli_error("audit verify: one export at a time ('%s' and '%s')", path, argv[i]);
            goto out;
        } else {
            path = argv[i];
        }
    }
    if (!path) {
        cli_error("audit verify: no export given (see `airlock audit --help`)");
        goto out;
    }
    if (audit_verifier_new(pinned ? key : NULL, flags, &v, &err) != AL_OK) {
        cli_error("audit verify: %s", err.message);
        goto out;
    }
    f = strcmp(path, "-") == 0 ? stdin : fopen(path, "re");
    if (!f) {
        cli_error("audit verify: cannot open %s: %s", path, strerror(errno));
        goto out;
    }
    enum audit_fault fault = AUDIT_FAULT_NONE;
    ssize_t n;
    while (fault == AUDIT_FAULT_NONE && (n = getline(&line, &line_cap, f)) >= 0) {
        size_t len = (size_t)n;
        if (len > 0 && line[len - 1] == '\n') {
            len--;
        }
        fault = audit_verifier_line(v, line, len, &problem);
    }
    if (fault == AUDIT_FAULT_NONE && ferror(f)) {
        cli_error("audit verify: cannot read %s: %s", path, strerror(errno));
        goto out;
    }
    fault = audit_verifier_finish(v, &problem);
    if (fault == AUDIT_FAULT_INTERNAL) {
        cli_error("audit verify: %s", problem.why);
        goto out;
    }
    audit_verifier_summary(v, &summary);
    print_result(json, path, fault, &problem, &summary);
    rc = fault == AUDIT_FAULT_NONE ? CLI_EXIT_COMPLETED : CLI_EXIT_FAILED;
out:
    if (f && f != stdin) {
        fclose(f);
    }
    free(line);
    audit_verifier_free(v);
    return rc;
}

int cmd_audit(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs(audit_usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_EXIT_USAGE : 0;
    }
    if (strcmp(argv[1], "verify") == 0) {
        return audit_verify(argc - 1, argv + 1);
    }
    cli_error("audit: unknown subcommand '%s' (see `airlock audit --help`)", argv[1]);
    return CLI_EXIT_USAGE;
}
