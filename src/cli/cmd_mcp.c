/*
 * cmd_mcp.c - `airlock mcp`: the Model Context Protocol's stdio transport in front of
 * airlockd's POST /v1/mcp (docs/mcp.md), for MCP clients that start a local command. Each line
 * of stdin is one JSON-RPC message, posted as it is to $AIRLOCK_URL/v1/mcp with $AIRLOCK_KEY as
 * bearer; each answer is written to stdout as one line, nothing for what airlockd accepts
 * without an answer (202: a notification). stdout carries only protocol messages: every log
 * line goes to stderr. A request airlockd cannot answer (unreachable, a refused key) gets a
 * JSON-RPC error of its own id, so the client sees why instead of waiting forever. EOF on stdin
 * ends it with 0.
 *
 * No state of its own: airlockd keeps none between messages either, so the proxy may be
 * restarted at any time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "cli.h"
#include "client.h"
#include "json.h"

#define MCP_LINE_MAX  ((size_t)16 << 20) /* bytes of one message from stdin */
#define MCP_ID_MAX    256
#define MCP_ERR_PARSE (-32700)
#define MCP_ERR_REACH (-32000) /* airlockd could not be reached */
#define MCP_ERR_AUTH  (-32001) /* airlockd refused the key (401, 403) */
#define MCP_ERR_HTTP  (-32002) /* any other answer that is no JSON-RPC message */

static const char mcp_usage[] =
        "usage: airlock mcp\n"
        "  the MCP stdio transport for airlockd: reads JSON-RPC messages, one a line, from\n"
        "  stdin, posts each to $AIRLOCK_URL/v1/mcp with the key $AIRLOCK_KEY as bearer and\n"
        "  writes each answer as one line to stdout; logs go to stderr\n"
        "exit status: 0 at the end of stdin, 1 stdout failed, 2 usage (AIRLOCK_URL or\n"
        "AIRLOCK_KEY missing)\n";

/* Writes one message as one line. 0, or -1 when stdout failed. */
static int mcp_write_line(const char *json, size_t len)
{
    struct buf line;
    int rc = -1;
    buf_init(&line, CLIENT_ANSWER_MAX);
    if (json_write_compact(&line, json, len) == BUF_OK && line.data &&
        buf_append_str(&line, "\n") == BUF_OK) {
        rc = fwrite(line.data, 1, line.len, stdout) == line.len && fflush(stdout) == 0 ? 0 : -1;
    }
    buf_done(&line);
    return rc;
}

/* Answers request `id` (its JSON text; "null" when unknown) with an error of ours. */
static int mcp_write_error(const char *id, int code, const char *message)
{
    struct buf b;
    buf_init(&b, 64 * 1024);
    buf_printf(&b, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":%d,\"message\":", id, code);
    json_write_string(&b, message, strlen(message));
    buf_append_str(&b, "}}");
    int rc = b.data ? mcp_write_line(b.data, b.len) : -1;
    buf_done(&b);
    return rc;
}

/* The message's id as JSON text into id (MCP_ID_MAX + 1 bytes): 1 for a request, 0 for a
 * notification, a response or a line that is no JSON object (then "null"). */
static int mcp_request_id(const char *line, size_t len, char *id)
{
    struct json_doc *doc = NULL;
    int ret = 0;
    snprintf(id, MCP_ID_MAX + 1, "null");
    if (json_parse(line, len, 64, &doc, NULL) != AL_OK) {
        return 0;
    }
    const struct json_node *root = json_root(doc);
    const struct json_node *n = root->type == JSON_OBJECT ? json_get(root, "id") : NULL;
    if (n && json_get(root, "method") && (n->type == JSON_STRING || n->type == JSON_NUMBER) &&
        n->raw_len <= MCP_ID_MAX) {
        memcpy(id, n->raw, n->raw_len);
        id[n->raw_len] = '\0';
        ret = 1;
    }
    json_doc_free(doc);
    return ret;
}

/* Posts one message and writes what answers it. 0, or -1 when stdout failed. */
static int mcp_forward(struct client *c, const char *line, size_t len)
{
    char id[MCP_ID_MAX + 1];
    char message[512];
    struct buf answer;
    long status = 0;
    int rc = 0;
    int request = mcp_request_id(line, len, id);
    buf_init(&answer, CLIENT_ANSWER_MAX);
    if (client_request(c, "POST", "/v1/mcp", line, len, &answer, &status) != 0) {
        /* client_request has logged why */
        snprintf(message, sizeof message, "airlockd at %.300s could not be reached", c->base);
        rc = request ? mcp_write_error(id, MCP_ERR_REACH, message) : 0;
        goto out;
    }
    if (status == 202) {
        goto out;
    }
    /* a JSON-RPC answer (200, or 400/403/500 naming the protocol error) goes out as it is */
    struct json_doc *doc = NULL;
    int jsonrpc = answer.data &&
                  json_parse(answer.data, answer.len, CLIENT_ANSWER_DEPTH, &doc, NULL) == AL_OK &&
                  json_root(doc)->type == JSON_OBJECT && json_get(json_root(doc), "jsonrpc");
    json_doc_free(doc);
    if (jsonrpc) {
        rc = mcp_write_line(answer.data, answer.len);
        goto out;
    }
    /* an API refusal ({"error":{code,message}}): logged, and the request answered with it */
    client_refused("mcp", status, &answer);
    if (request) {
        snprintf(message, sizeof message, "airlockd answered HTTP %ld%s", status,
                 status == 401   ? ": the key in AIRLOCK_KEY is not valid"
                 : status == 403 ? ": the key's principal is not an agent"
                                 : "");
        rc = mcp_write_error(id, status == 401 || status == 403 ? MCP_ERR_AUTH : MCP_ERR_HTTP,
                             message);
    }
out:
    buf_done(&answer);
    return rc;
}

/* Reads one line (without its newline) into b: 1, 0 at the end of stdin, -1 for a line over
 * MCP_LINE_MAX (skipped to its end). Byte by byte, not fgets: a NUL byte inside a line must not
 * hide where the line ends (the next message would be glued to it, its request never
 * answered). */
static int mcp_read_line(struct buf *b)
{
    char chunk[64 * 1024];
    size_t n = 0;
    int too_long = 0;
    int got = 0;
    int c;
    buf_reset(b);
    while ((c = getc(stdin)) != EOF) {
        got = 1;
        if (c == '\n') {
            break;
        }
        chunk[n++] = (char)c;
        if (n == sizeof chunk) {
            too_long = too_long || buf_append(b, chunk, n) != BUF_OK;
            n = 0;
        }
    }
    too_long = too_long || (n && buf_append(b, chunk, n) != BUF_OK);
    if (!got) {
        return 0;
    }
    return too_long ? -1 : 1;
}

int cmd_mcp(int argc, char **argv)
{
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs(mcp_usage, stdout);
        return 0;
    }
    if (argc != 1) {
        fputs(mcp_usage, stderr);
        return CLI_EXIT_USAGE;
    }
    struct client c;
    struct buf line;
    int rc = CLI_EXIT_COMPLETED;
    if (client_open(&c, "mcp") != 0) {
        return CLI_EXIT_USAGE;
    }
    /* a tool call lasts as long as its run (its own timeout) or until it waits for a person:
     * airlockd bounds it, not a timeout of ours */
    c.timeout_s = 0;
    buf_init(&line, MCP_LINE_MAX);
    while (1) {
        int r = mcp_read_line(&line);
        if (r == 0) {
            break;
        }
        if (r < 0) {
            cli_error("mcp: a message over %zu bytes was skipped", MCP_LINE_MAX);
            if (mcp_write_error("null", MCP_ERR_PARSE, "the message is too long") != 0) {
                rc = CLI_EXIT_FAILED;
                break;
            }
            continue;
        }
        size_t start = 0;
        while (start < line.len && strchr(" \t\r", line.data[start])) {
            start++;
        }
        if (start == line.len) {
            continue; /* a blank line */
        }
        if (mcp_forward(&c, line.data, line.len) != 0) {
            cli_error("mcp: stdout was closed");
            rc = CLI_EXIT_FAILED;
            break;
        }
    }
    buf_done(&line);
    client_close(&c);
    return rc;
}
