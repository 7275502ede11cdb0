/*
 * boundary.c - the check of boundary.h: a run whose only host function, value.get, answers the
 * value given, and whose source returns null when the call returned and the call's message when
 * it threw (the decoder refused the value). The source is airlockd's own, so its result is
 * trusted; the value is never evaluated, only decoded.
 */
#include "boundary.h"

#include <stdio.h>
#include <string.h>

#include "json.h"

struct boundary_value {
    const char *json;
    size_t len;
};

static const char boundary_source[] = "try { await value.get(); return null; }\n"
                                      "catch (e) { return String(e && e.message); }\n";

/* The decoder's words after the library's "host function F returned an invalid value: ". */
static const char boundary_prefix[] = "returned an invalid value: ";

static void boundary_answer(struct al_call *call, void *userdata)
{
    const struct boundary_value *v = userdata;
    al_call_return(call, v->json, v->len);
}

int boundary_check(struct al_runner *runner, const char *json, size_t len, char *why,
                   size_t why_len)
{
    struct boundary_value v = { json, len };
    struct al_run_opts *opts = al_run_opts_new();
    struct al_result *result = NULL;
    struct json_doc *doc = NULL;
    struct al_error err;
    int ret = -1;
    memset(&err, 0, sizeof err);
    snprintf(why, why_len, "out of memory");
    if (!opts ||
        al_run_opts_set_source(opts, boundary_source, sizeof boundary_source - 1, "check.js") !=
                AL_OK ||
        al_run_opts_add_host(opts, "value.get", boundary_answer, &v, 0) != AL_OK ||
        al_run_opts_set_limit(opts, AL_LIMIT_TIMEOUT_MS, BOUNDARY_CHECK_TIMEOUT_MS) != AL_OK ||
        al_run_opts_set_limit(opts, AL_LIMIT_MEMORY_BYTES, BOUNDARY_CHECK_HEAP_BYTES) != AL_OK) {
        goto out;
    }
    enum al_code code = al_run(runner, opts, &result, &err);
    if (code != AL_OK) {
        snprintf(why, why_len, "%s", err.message[0] ? err.message : al_code_name(code));
        goto out;
    }
    size_t n = 0;
    const char *value = al_result_value(result, &n);
    if (al_result_status(result) != AL_STATUS_COMPLETED || !value) {
        snprintf(why, why_len, "the check ended %s", al_code_name(al_result_error_code(result)));
        goto out;
    }
    if (strcmp(value, "null") == 0) {
        ret = 0;
        goto out;
    }
    /* a JSON string: the message, shown after the library's prefix */
    if (json_parse(value, n, 2, &doc, &err) != AL_OK || json_root(doc)->type != JSON_STRING) {
        snprintf(why, why_len, "the check answered no message");
        goto out;
    }
    const char *message = json_root(doc)->str;
    const char *at = strstr(message, boundary_prefix);
    snprintf(why, why_len, "%s", at ? at + sizeof boundary_prefix - 1 : message);
    ret = 1;
out:
    json_doc_free(doc);
    al_result_free(result);
    al_run_opts_free(opts);
    return ret;
}
