/*
 * cmd_audit.c - `airlock audit verify FILE.jsonl [--public-key HEX] [--allow-unsealed] [--json]`:
 * checks an audit export offline (src/gov/audit.c does the checking; this file reads lines and
 * reports). Exit 0 when the whole export verifies, 1 at the first bad record (named by line,
 * seq and why), 2 for usage errors or an unreadable file. The checkpoints follow the chain of
 * keys from the pinned one (a rotated key is announced by a checkpoint signed with the one
 * before). Without --public-key the checkpoints are checked against the key they carry, and the
 * report says the key was not pinned: anyone able to rewrite the file could also have re-signed it
 * with a key of their own. A file alone cannot show that records were cut from its end together
 * with their checkpoints: --checkpoint takes one the auditor kept (GET /v1/audit/checkpoint), which
 * the export must reach.
 *
 * `airlock audit export [--after SEQ] [-o FILE]` streams GET /v1/audit/export from airlockd as
 * it arrives (constant memory for any size), so `airlock audit export | airlock audit verify -`
 * checks the server's log end to end. The export route has no `after`: --after drops the
 * records up to SEQ here, which makes the output the continuation of an export that ended at
 * SEQ (appended to it, the whole file verifies).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit.h"
#include "buf.h"
#include "cli.h"
#include "client.h"
#include "client_cmd.h"
#include "json.h"

static const char audit_usage[] =
        "usage: airlock audit verify FILE.jsonl [--public-key HEX] [--checkpoint CP.json]\n"
        "                            [--allow-unsealed] [--json]\n"
        "       airlock audit export [--after SEQ] [-o FILE]\n"
        "       airlock audit checkpoint\n"
        "  checkpoint: the last record airlockd signs now (GET /v1/audit/checkpoint) as one\n"
        "  JSON object; kept somewhere the server cannot reach, it is what --checkpoint\n"
        "  checks a later export against.\n"
        "  export: airlockd's audit log (GET /v1/audit/export at $AIRLOCK_URL, key\n"
        "  $AIRLOCK_KEY; admin or auditor) as JSON Lines on stdout or into FILE, ending with a\n"
        "  signed checkpoint; --after SEQ leaves out the records up to SEQ (the rest of an\n"
        "  export that ended there). `airlock audit export | airlock audit verify -` checks it.\n"
        "  Exit status of export: 0 written, 1 refused or unreachable, 2 usage error.\n"
        "verify:\n"
        "  checks an audit export (one record per line, docs/audit.md; FILE - reads stdin):\n"
        "  every record's hash, the prev links and seq order, every checkpoint's signature\n"
        "  --public-key HEX   the server's raw Ed25519 public key (64 hex digits); the\n"
        "                     first checkpoint must carry it, and every later one it or a\n"
        "                     key it announced (a rotation: a checkpoint signed with the\n"
        "                     key before, naming next_public_key). Without it the key is\n"
        "                     not pinned.\n"
        "  --checkpoint CP.json  a checkpoint kept earlier (the JSON of GET\n"
        "                     /v1/audit/checkpoint): the export must reach its seq with its\n"
        "                     hash, signed by the same key; an export cut before it fails\n"
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
            buf_printf(&b, ",\"key_pinned\":%s,\"keys\":%zu", s->key_pinned ? "true" : "false",
                       s->keys);
            if (s->kept_seq) {
                buf_printf(&b, ",\"checkpoint_seq\":%" PRIu64, s->kept_seq);
            }
            buf_append_str(&b, "}\n");
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
    if (s->kept_seq) {
        printf("the kept checkpoint of seq %" PRIu64 " is reached, with its hash\n", s->kept_seq);
    }
    if (s->keys > 1) {
        printf("keys: %zu in the chain, each announced by a checkpoint signed with the one "
               "before; the last:\n",
               s->keys);
    }
    if (s->key_pinned) {
        printf("key:  %s (%s)\n", s->key, s->keys > 1 ? "reached from the pinned key" : "pinned");
    } else {
        printf("key:  %s (NOT pinned: pass --public-key to check who signed)\n",
               s->key[0] ? s->key : "none");
    }
}

/* CP.json: {"seq","hash","public_key","signature",...} as GET /v1/audit/checkpoint answers;
 * handed to the verifier, else prints why and -1. */
static int kept_checkpoint(const char *path, struct audit_verifier *v)
{
    const char *what = "audit verify: --checkpoint";
    struct buf text;
    struct json_doc *doc = NULL;
    struct al_error err = { 0 };
    int rc = -1;
    buf_init(&text, 1 << 16);
    if (client_cmd_read_file(what, path, &text) != 0) {
        goto out;
    }
    if (json_parse(text.data, text.len, 8, &doc, &err) != AL_OK) {
        cli_error("%s: %s is not JSON: %s", what, path, err.message);
        goto out;
    }
    const struct json_node *root = json_root(doc);
    const struct json_node *seq = json_get(root, "seq");
    const struct json_node *f[3] = { json_get(root, "hash"), json_get(root, "public_key"),
                                     json_get(root, "signature") };
    int ok = seq && seq->type == JSON_NUMBER && seq->num >= 1 && seq->num <= AUDIT_MAX_SEQ &&
             seq->num == (double)(uint64_t)seq->num;
    for (size_t i = 0; i < 3; i++) {
        ok = ok && f[i] && f[i]->type == JSON_STRING;
    }
    if (!ok || audit_verifier_expect(v, (uint64_t)seq->num, f[0]->str, f[1]->str, f[2]->str,
                                     &err) != AL_OK) {
        cli_error("%s: %s is not a checkpoint (GET /v1/audit/checkpoint's "
                  "{\"seq\",\"hash\",\"public_key\",\"signature\"})",
                  what, path);
        goto out;
    }
    rc = 0;
out:
    json_doc_free(doc);
    buf_done(&text);
    return rc;
}

static int audit_verify(int argc, char **argv)
{
    const char *checkpoint = NULL;
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
        } else if (strcmp(argv[i], "--checkpoint") == 0) {
            if (i + 1 >= argc) {
                cli_error("audit verify: --checkpoint needs a file (GET /v1/audit/checkpoint)");
                goto out;
            }
            checkpoint = argv[++i];
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
    if (checkpoint && kept_checkpoint(checkpoint, v) != 0) {
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

/* ------------------------------------------------------------------------------ export */

struct audit_out {
    FILE *f;
    long long after; /* 0: every line */
    struct buf line; /* with --after: the line being received */
    unsigned long long records;
};

static int audit_put(struct audit_out *o, const char *data, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        o->records += data[i] == '\n';
    }
    if (fwrite(data, 1, len, o->f) != len) {
        cli_error("audit export: cannot write: %s", strerror(errno));
        return -1;
    }
    return 0;
}

/* One whole line: kept when its seq is past --after. */
static int audit_line(struct audit_out *o)
{
    struct json_doc *doc = NULL;
    struct al_error err = { 0 };
    int rc = -1;
    if (json_parse(o->line.data, o->line.len - 1, 64, &doc, &err) != AL_OK) {
        cli_error("audit export: airlockd sent a line that is not JSON: %s", err.message);
        goto out;
    }
    const struct json_node *seq = json_get(json_root(doc), "seq");
    if (!seq || seq->type != JSON_NUMBER) {
        cli_error("audit export: airlockd sent a record without a seq");
        goto out;
    }
    rc = seq->num > (double)o->after ? audit_put(o, o->line.data, o->line.len) : 0;
out:
    json_doc_free(doc);
    buf_reset(&o->line);
    return rc;
}

static int audit_sink(void *userdata, const char *data, size_t len)
{
    struct audit_out *o = userdata;
    if (!o->after) {
        return audit_put(o, data, len);
    }
    while (len) {
        const char *nl = memchr(data, '\n', len);
        size_t take = nl ? (size_t)(nl - data) + 1 : len;
        if (buf_append(&o->line, data, take) != BUF_OK) {
            cli_error("audit export: a record of more than %zu bytes", o->line.max);
            return -1;
        }
        if (nl && audit_line(o) != 0) {
            return -1;
        }
        data += take;
        len -= take;
    }
    return 0;
}

static int audit_export(int argc, char **argv)
{
    const char *what = "audit export";
    const char *after = NULL, *file = NULL;
    int json = 0;
    const struct client_cmd_opt opts[] = {
        { "--after", &after, NULL },
        { "-o", &file, NULL },
        { "--json", NULL, &json }, /* the export is JSON Lines already */
    };
    struct audit_out o = { stdout, 0, { 0 }, 0 };
    struct client c = { 0 };
    struct buf answer;
    long status = 0;
    int fd = -1;
    int rc = CLI_EXIT_USAGE;
    char tmp[4200] = "";
    buf_init(&o.line, (size_t)8 << 20);
    buf_init(&answer, CLIENT_ANSWER_MAX);
    int a = client_cmd_args(what, audit_usage, argc, argv, opts, 3, NULL, 0, 0);
    if (a != 0) {
        rc = a > 0 ? CLI_EXIT_COMPLETED : CLI_EXIT_USAGE;
        goto out;
    }
    if (after && strcmp(after, "0") != 0 &&
        client_cmd_number(what, "--after", after, 1LL << 53, &o.after) != 0) {
        goto out;
    }
    rc = client_cmd_open(&c, what);
    if (rc != 0) {
        goto out;
    }
    if (file) {
        /* Into a new file beside FILE, renamed over it once the export is whole: a refused or
         * broken export leaves an earlier FILE as it was, and a symlink at FILE is replaced,
         * never written through. mkstemp's file is readable by its owner only, as the log
         * (it names people and holds runs' inputs) must be. */
        int n = snprintf(tmp, sizeof tmp, "%s.XXXXXX", file);
        fd = n > 0 && (size_t)n < sizeof tmp ? mkstemp(tmp) : -1;
        if (fd < 0 || !(o.f = fdopen(fd, "w"))) {
            cli_error("%s: cannot write %s: %s", what, file,
                      n > 0 && (size_t)n < sizeof tmp ? strerror(errno) : "the name is too long");
            if (fd >= 0) {
                unlink(tmp);
            }
            tmp[0] = '\0';
            rc = CLI_EXIT_USAGE;
            goto out;
        }
        fd = -1;
    }
    c.timeout_s = 0; /* an export of any size: as long as it takes */
    rc = CLI_EXIT_FAILED;
    if (client_stream(&c, "/v1/audit/export", audit_sink, &o, &answer, &status) != 0) {
        goto out;
    }
    if (status != 200) {
        client_refused(what, status, &answer);
        goto out;
    }
    if (o.line.len) {
        cli_error("%s: the export ends in the middle of a record", what);
        goto out;
    }
    if (fflush(o.f) != 0) {
        cli_error("%s: cannot write: %s", what, strerror(errno));
        goto out;
    }
    rc = CLI_EXIT_COMPLETED;
out:
    if (o.f && o.f != stdout) {
        if (fclose(o.f) != 0 && rc == CLI_EXIT_COMPLETED) {
            cli_error("%s: cannot write %s: %s", what, file, strerror(errno));
            rc = CLI_EXIT_FAILED;
        }
        if (rc == CLI_EXIT_COMPLETED && rename(tmp, file) != 0) {
            cli_error("%s: cannot write %s: %s", what, file, strerror(errno));
            rc = CLI_EXIT_FAILED;
        }
        if (rc != CLI_EXIT_COMPLETED) {
            unlink(tmp); /* never leave half an export that looks like one */
        } else {
            printf("%s: %llu records\n", file, o.records);
        }
    }
    if (fd >= 0) {
        close(fd);
    }
    buf_done(&o.line);
    buf_done(&answer);
    client_close(&c);
    return rc;
}

static int audit_checkpoint(int argc, char **argv)
{
    const char *what = "audit checkpoint";
    int json = 0;
    const struct client_cmd_opt opts[] = { { "--json", NULL, &json } }; /* it is JSON already */
    struct client c = { 0 };
    struct buf answer;
    long status = 0;
    buf_init(&answer, CLIENT_ANSWER_MAX);
    int rc = client_cmd_args(what, audit_usage, argc, argv, opts, 1, NULL, 0, 0);
    if (rc != 0) {
        rc = rc > 0 ? CLI_EXIT_COMPLETED : CLI_EXIT_USAGE;
        goto out;
    }
    rc = client_cmd_open(&c, what);
    if (rc == 0) {
        rc = client_cmd_call(&c, what, "GET", "/v1/audit/checkpoint", NULL, &answer, &status);
    }
    if (rc == 0) {
        rc = client_cmd_print_answer(what, &answer);
    }
out:
    buf_done(&answer);
    client_close(&c);
    return rc;
}

static const struct client_cmd_sub audit_subs[] = {
    { "verify", audit_verify, "check an export offline: hashes, links, signatures" },
    { "export", audit_export, "airlockd's audit log as JSON Lines" },
    { "checkpoint", audit_checkpoint, "the signed head of the log, to keep for verify" },
};

int cmd_audit(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs(audit_usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_EXIT_USAGE : 0;
    }
    return client_cmd_dispatch("audit", "  the audit log", argc, argv, audit_subs,
                               sizeof audit_subs / sizeof audit_subs[0]);
}
