/*
 * s3.c - the S3 client: path-style requests signed by libcurl (CURLOPT_AWS_SIGV4), the answer
 * judged and, for a listing, parsed by a small bounded XML scanner; and s3_mount_ops over it.
 *
 * What libcurl 7.88 (Debian 12) does and does not do for SigV4, and what this file adds:
 * - it signs every header we set (x-amz-*, Range, Content-Type) but never adds
 *   x-amz-content-sha256, which S3 requires on every request: we add it, the SHA-256 hex of the
 *   body. Its payload hash is that of CURLOPT_POSTFIELDS (empty for a GET), so a PUT sends its
 *   body as POSTFIELDS with the method PUT, never through a read callback (whose body curl
 *   would hash as empty);
 * - it puts the query string into the canonical request as it is, unsorted: every query this
 *   file builds is already canonical (names sorted, names and values URI-encoded the AWS way);
 * - it takes the path as it is: keys are URI-encoded here ('/' kept), once, as S3 expects, and
 *   CURLOPT_PATH_AS_IS keeps curl from folding "." and ".." segments of a key.
 *
 * Hardening, against whoever answers at the endpoint: only http/https, no redirects, no proxy
 * from the environment (it would see the requests), no cookies, no content decoding; every
 * answer capped while it arrives; an error body read for its <Code> alone, which is kept only
 * when it is a short identifier; a listing parsed under fixed bounds with no DOCTYPE (so no
 * entity of the server's own). Messages never carry the endpoint, the credentials or a body.
 */
#include "s3.h"

#include <curl/curl.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "error.h"
#include "hex.h"
#include "utf8.h"

#define S3_ERROR_BODY_MAX ((size_t)64 << 10) /* bytes of an error answer read */
#define S3_XML_DEPTH      16
#define S3_XML_TEXT_MAX   4096 /* bytes of one element's text, decoded */
#define S3_XML_PATH_MAX   256
#define S3_CODE_MAX       64 /* bytes of S3's <Code> kept in a message */
#define S3_KEY_SHOWN_MAX  120 /* bytes of a key shown in a message */

struct s3_mount {
    char *endpoint; /* without a trailing '/' */
    char *bucket;
    char *sigv4; /* "aws:amz:REGION:s3" */
    char *access_key_id;
    char *secret; /* cleansed on free */
    int64_t timeout_ms;
    pthread_mutex_t lock;
    CURL *idle; /* under lock: a handle kept for its open connection */
};

/* One request and its answer. */
struct s3_req {
    struct s3_mount *m;
    const char *op;  /* "GET", "PUT", ... as a message names it */
    const char *key; /* as a message names it ("" for a listing of the bucket's root) */
    struct buf answer;
    int too_big;
    long status;
    curl_off_t content_length; /* -1: none */
    char *err;
    size_t errlen;
};

static pthread_once_t s3_curl_once = PTHREAD_ONCE_INIT;
static int s3_curl_ok;

static void s3_curl_init(void)
{
    s3_curl_ok = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
}

/* ---- mount --------------------------------------------------------------------------------- */

static int s3_chars_in(const char *s, size_t min, size_t max, const char *allowed)
{
    size_t n = strlen(s);
    return n >= min && n <= max && strspn(s, allowed) == n;
}

/* http(s)://authority[/path], no user info, query or fragment. */
static int s3_endpoint_valid(const char *e)
{
    const char *rest = NULL;
    if (strncmp(e, "http://", 7) == 0) {
        rest = e + 7;
    } else if (strncmp(e, "https://", 8) == 0) {
        rest = e + 8;
    } else {
        return 0;
    }
    size_t authority = strcspn(rest, "/");
    if (authority == 0 || memchr(rest, '@', authority)) {
        return 0;
    }
    for (const char *p = e; *p; p++) {
        if (*p <= ' ' || *p == 0x7f || *p == '?' || *p == '#' || *p == '\\') {
            return 0;
        }
    }
    return strlen(e) < 1024;
}

void s3_mount_free(struct s3_mount *m)
{
    if (!m) {
        return;
    }
    if (m->idle) {
        curl_easy_cleanup(m->idle);
    }
    pthread_mutex_destroy(&m->lock);
    free(m->endpoint);
    free(m->bucket);
    free(m->sigv4);
    if (m->access_key_id) {
        OPENSSL_cleanse(m->access_key_id, strlen(m->access_key_id));
    }
    free(m->access_key_id);
    if (m->secret) {
        OPENSSL_cleanse(m->secret, strlen(m->secret));
    }
    free(m->secret);
    free(m);
}

enum al_code s3_mount_new(const struct s3_mount_config *c, struct s3_mount **ret,
                          struct al_error *reterr)
{
    static const char lower_digits[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    struct s3_mount *m = NULL;
    enum al_code rc = AL_CONFIG_ERROR;
    char allowed[64];
    if (!c || !ret) {
        return error_set(reterr, AL_CONFIG_ERROR, "s3: no configuration");
    }
    if (!c->endpoint || !s3_endpoint_valid(c->endpoint)) {
        return error_set(reterr, AL_CONFIG_ERROR,
                         "s3: endpoint must be an http or https URL without user info, query "
                         "or fragment");
    }
    snprintf(allowed, sizeof allowed, "%s.-", lower_digits);
    if (!c->bucket || !s3_chars_in(c->bucket, 3, 63, allowed) || c->bucket[0] == '.' ||
        c->bucket[0] == '-') {
        return error_set(reterr, AL_CONFIG_ERROR,
                         "s3: bucket must be 3-63 of a-z, 0-9, '.' and '-'");
    }
    snprintf(allowed, sizeof allowed, "%s-", lower_digits);
    if (!c->region || !s3_chars_in(c->region, 1, 32, allowed)) {
        return error_set(reterr, AL_CONFIG_ERROR, "s3: region must be 1-32 of a-z, 0-9 and '-'");
    }
    size_t id_len = c->access_key_id ? strlen(c->access_key_id) : 0;
    int id_ok = id_len >= 1 && id_len <= 128;
    for (size_t i = 0; id_ok && i < id_len; i++) {
        id_ok = c->access_key_id[i] > ' ' && c->access_key_id[i] < 0x7f;
    }
    if (!id_ok) {
        return error_set(reterr, AL_CONFIG_ERROR,
                         "s3: access_key_id must be 1-128 printable ASCII characters, no space");
    }
    size_t secret_len = c->secret_access_key ? strlen(c->secret_access_key) : 0;
    if (secret_len < 1 || secret_len > 256) {
        return error_set(reterr, AL_CONFIG_ERROR, "s3: secret_access_key must be 1-256 bytes");
    }
    if (c->timeout_ms < 0) {
        return error_set(reterr, AL_CONFIG_ERROR, "s3: timeout_ms must not be negative");
    }
    pthread_once(&s3_curl_once, s3_curl_init);
    if (!s3_curl_ok) {
        return error_set(reterr, AL_INTERNAL_ERROR, "s3: curl does not start");
    }
    m = calloc(1, sizeof *m);
    if (!m) {
        return error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
    }
    pthread_mutex_init(&m->lock, NULL);
    size_t endpoint_len = strlen(c->endpoint);
    while (endpoint_len > 0 && c->endpoint[endpoint_len - 1] == '/') {
        endpoint_len--;
    }
    size_t sigv4_len = strlen(c->region) + 16;
    m->endpoint = buf_dup(c->endpoint, endpoint_len);
    m->bucket = buf_dup(c->bucket, strlen(c->bucket));
    m->sigv4 = malloc(sigv4_len);
    m->access_key_id = buf_dup(c->access_key_id, id_len);
    m->secret = buf_dup(c->secret_access_key, secret_len);
    m->timeout_ms = c->timeout_ms > 0 ? c->timeout_ms : S3_TIMEOUT_MS;
    if (!m->endpoint || !m->bucket || !m->sigv4 || !m->access_key_id || !m->secret) {
        rc = error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
        goto out;
    }
    snprintf(m->sigv4, sigv4_len, "aws:amz:%s:s3", c->region);
    *ret = m;
    m = NULL;
    rc = AL_OK;
out:
    s3_mount_free(m);
    return rc;
}

/* ---- messages ------------------------------------------------------------------------------ */

/* "bucket B: OP KEY: " + what. The key cut and made valid UTF-8. */
static void s3_fail(const struct s3_req *r, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));

static void s3_fail(const struct s3_req *r, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    if (!r->err || r->errlen == 0) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    size_t key_len = strlen(r->key);
    size_t shown = key_len > S3_KEY_SHOWN_MAX ? utf8_cut(r->key, S3_KEY_SHOWN_MAX) : key_len;
    size_t clean_len = 0;
    char *clean = utf8_valid_dup(r->key, shown, 0, &clean_len);
    snprintf(r->err, r->errlen, "bucket %s: %s \"%s%s\": %s", r->m->bucket, r->op,
             clean ? clean : "", shown < key_len ? "..." : "", what);
    free(clean);
}

/* ---- XML ----------------------------------------------------------------------------------- */

/* Called at each element's end with its path from the root ("ListBucketResult/Contents/Key")
 * and its own text (decoded; text split by child elements is joined). Non-zero stops the walk
 * with an error (the callback's message already in err). */
typedef int s3_xml_fn(const char *path, const char *text, size_t len, void *ud);

struct s3_xml {
    const char *p;
    const char *end;
    char path[S3_XML_PATH_MAX];
    size_t path_len;
    size_t marks[S3_XML_DEPTH]; /* path_len before each open element */
    size_t depth;
    char text[S3_XML_TEXT_MAX + 1];
    size_t text_len;
    char *err;
    size_t errlen;
};

static int s3_xml_error(struct s3_xml *x, const char *what)
{
    if (x->err && x->errlen) {
        snprintf(x->err, x->errlen, "%s", what);
    }
    return -1;
}

static int s3_xml_text_add(struct s3_xml *x, const char *s, size_t n)
{
    if (n > S3_XML_TEXT_MAX - x->text_len) {
        return s3_xml_error(x, "a text is over 4096 bytes");
    }
    memcpy(x->text + x->text_len, s, n);
    x->text_len += n;
    return 0;
}

static size_t s3_utf8_put(uint32_t cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* One entity at x->p ('&'): the five of XML and character references. */
static int s3_xml_entity(struct s3_xml *x)
{
    static const struct {
        const char *name;
        char c;
    } named[] = { { "lt;", '<' }, { "gt;", '>' }, { "amp;", '&' }, { "quot;", '"' },
                  { "apos;", '\'' } };
    const char *p = x->p + 1;
    size_t left = (size_t)(x->end - p);
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++) {
        size_t n = strlen(named[i].name);
        if (left >= n && memcmp(p, named[i].name, n) == 0) {
            x->p = p + n;
            return s3_xml_text_add(x, &named[i].c, 1);
        }
    }
    if (left < 2 || *p != '#') {
        return s3_xml_error(x, "an unknown entity");
    }
    p++;
    int base = 10;
    if (*p == 'x') {
        base = 16;
        p++;
    }
    uint32_t cp = 0;
    size_t digits = 0;
    for (; p < x->end && *p != ';'; p++, digits++) {
        int d = -1;
        if (*p >= '0' && *p <= '9') {
            d = *p - '0';
        } else if (base == 16 && *p >= 'a' && *p <= 'f') {
            d = *p - 'a' + 10;
        } else if (base == 16 && *p >= 'A' && *p <= 'F') {
            d = *p - 'A' + 10;
        }
        if (d < 0 || digits >= 8) {
            return s3_xml_error(x, "a bad character reference");
        }
        cp = cp * (uint32_t)base + (uint32_t)d;
    }
    if (p >= x->end || digits == 0 || cp == 0 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
        return s3_xml_error(x, "a bad character reference");
    }
    x->p = p + 1;
    char utf8[4];
    return s3_xml_text_add(x, utf8, s3_utf8_put(cp, utf8));
}

static const char *s3_xml_find(const struct s3_xml *x, const char *from, const char *needle)
{
    size_t n = strlen(needle);
    for (const char *p = from; (size_t)(x->end - p) >= n; p++) {
        if (memcmp(p, needle, n) == 0) {
            return p;
        }
    }
    return NULL;
}

static int s3_xml_name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '-' || c == '.' || c == ':' || (unsigned char)c >= 0x80;
}

/* The element name at x->p, namespace prefix dropped; advances past it. */
static int s3_xml_name(struct s3_xml *x, const char **ret, size_t *ret_len)
{
    const char *start = x->p;
    while (x->p < x->end && s3_xml_name_char(*x->p)) {
        x->p++;
    }
    if (x->p == start) {
        return s3_xml_error(x, "not well-formed XML");
    }
    const char *local = start;
    for (const char *q = start; q < x->p; q++) {
        if (*q == ':') {
            local = q + 1;
        }
    }
    *ret = local;
    *ret_len = (size_t)(x->p - local);
    return 0;
}

static int s3_xml_open(struct s3_xml *x, int *ret_closed)
{
    const char *name;
    size_t len;
    if (s3_xml_name(x, &name, &len) != 0) {
        return -1;
    }
    if (x->depth >= S3_XML_DEPTH) {
        return s3_xml_error(x, "XML nested too deep");
    }
    size_t sep = x->depth > 0 ? 1 : 0;
    if (len + sep > sizeof x->path - 1 - x->path_len) {
        return s3_xml_error(x, "an XML path too long");
    }
    x->marks[x->depth++] = x->path_len;
    if (sep) {
        x->path[x->path_len++] = '/';
    }
    memcpy(x->path + x->path_len, name, len);
    x->path_len += len;
    x->path[x->path_len] = '\0';
    /* attributes: skipped, quotes respected */
    char quote = 0;
    for (; x->p < x->end; x->p++) {
        if (quote) {
            quote = *x->p == quote ? 0 : quote;
        } else if (*x->p == '"' || *x->p == '\'') {
            quote = *x->p;
        } else if (*x->p == '>') {
            *ret_closed = x->p[-1] == '/'; /* the name came first: p[-1] is ours */
            x->p++;
            x->text_len = 0;
            return 0;
        }
    }
    return s3_xml_error(x, "not well-formed XML");
}

static int s3_xml_close(struct s3_xml *x, s3_xml_fn *fn, void *ud)
{
    if (x->depth == 0) {
        return s3_xml_error(x, "not well-formed XML");
    }
    x->text[x->text_len] = '\0';
    if (fn(x->path, x->text, x->text_len, ud) != 0) {
        return -1;
    }
    x->text_len = 0;
    x->path_len = x->marks[--x->depth];
    x->path[x->path_len] = '\0';
    return 0;
}

/* 1 when s[0..n) is XML white space alone (s need not be NUL-terminated) */
static int s3_xml_blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n') {
            return 0;
        }
    }
    return 1;
}

static int s3_xml_walk(const char *xml, size_t len, s3_xml_fn *fn, void *ud, char *err,
                       size_t errlen)
{
    struct s3_xml *x = calloc(1, sizeof *x);
    int rc = -1;
    int seen_root = 0;
    if (!x) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    x->p = xml;
    x->end = xml + len;
    x->err = err;
    x->errlen = errlen;
    while (x->p < x->end) {
        if (*x->p == '&') {
            if (x->depth == 0 || s3_xml_entity(x) != 0) {
                goto fail;
            }
            continue;
        }
        if (*x->p != '<') {
            const char *stop = x->p;
            while (stop < x->end && *stop != '<' && *stop != '&') {
                stop++;
            }
            if (memchr(x->p, '\0', (size_t)(stop - x->p))) {
                s3_xml_error(x, "a NUL byte in XML");
                goto fail;
            }
            if (x->depth > 0) {
                if (s3_xml_text_add(x, x->p, (size_t)(stop - x->p)) != 0) {
                    goto fail;
                }
            } else if (!s3_xml_blank(x->p, (size_t)(stop - x->p))) {
                s3_xml_error(x, "text outside the root element");
                goto fail;
            }
            x->p = stop;
            continue;
        }
        size_t left = (size_t)(x->end - x->p);
        const char *close = NULL;
        if (left >= 2 && x->p[1] == '?') {
            close = s3_xml_find(x, x->p + 2, "?>");
            x->p = close ? close + 2 : x->p;
        } else if (left >= 4 && memcmp(x->p, "<!--", 4) == 0) {
            close = s3_xml_find(x, x->p + 4, "-->");
            x->p = close ? close + 3 : x->p;
        } else if (left >= 9 && memcmp(x->p, "<![CDATA[", 9) == 0) {
            close = s3_xml_find(x, x->p + 9, "]]>");
            if (close && (x->depth == 0 || s3_xml_text_add(x, x->p + 9,
                                                           (size_t)(close - x->p - 9)) != 0)) {
                goto fail;
            }
            x->p = close ? close + 3 : x->p;
        } else if (left >= 2 && x->p[1] == '!') {
            s3_xml_error(x, "a DOCTYPE or declaration in XML");
            goto fail;
        } else if (left >= 2 && x->p[1] == '/') {
            const char *name;
            size_t name_len;
            x->p += 2;
            if (s3_xml_name(x, &name, &name_len) != 0) {
                goto fail;
            }
            const char *open = x->path + x->marks[x->depth > 0 ? x->depth - 1 : 0] +
                               (x->depth > 1 ? 1 : 0);
            if (x->depth == 0 || strlen(open) != name_len || memcmp(open, name, name_len) != 0) {
                s3_xml_error(x, "not well-formed XML (mismatched tags)");
                goto fail;
            }
            while (x->p < x->end && (*x->p == ' ' || *x->p == '\t' || *x->p == '\r' ||
                                     *x->p == '\n')) {
                x->p++;
            }
            if (x->p >= x->end || *x->p != '>') {
                s3_xml_error(x, "not well-formed XML");
                goto fail;
            }
            x->p++;
            if (s3_xml_close(x, fn, ud) != 0) {
                goto fail;
            }
            continue;
        } else {
            int closed = 0;
            if (x->depth == 0 && seen_root) {
                s3_xml_error(x, "a second root element");
                goto fail;
            }
            x->p++;
            if (s3_xml_open(x, &closed) != 0) {
                goto fail;
            }
            seen_root = 1;
            if (closed && s3_xml_close(x, fn, ud) != 0) {
                goto fail;
            }
            continue;
        }
        if (!close) {
            s3_xml_error(x, "not well-formed XML");
            goto fail;
        }
    }
    if (!seen_root || x->depth != 0) {
        s3_xml_error(x, "not well-formed XML (cut short)");
        goto fail;
    }
    rc = 0;
fail:
    free(x);
    return rc;
}

/* ---- listing parse ------------------------------------------------------------------------- */

struct s3_list_state {
    s3_list_fn *each;
    void *ud;
    int stopped;
    int is_list; /* the root is ListBucketResult */
    int truncated;
    char *token;
    char key[S3_KEY_MAX + 1];
    size_t key_len;
    int have_key;
    uint64_t size;
    char *err;
    size_t errlen;
};

static int s3_list_fail(struct s3_list_state *s, const char *what)
{
    snprintf(s->err, s->errlen, "%s", what);
    return -1;
}

static int s3_list_node(const char *path, const char *text, size_t len, void *ud)
{
    struct s3_list_state *s = ud;
    if (strncmp(path, "ListBucketResult", 16) != 0 || (path[16] != '\0' && path[16] != '/')) {
        return s3_list_fail(s, "the answer is not a ListBucketResult");
    }
    s->is_list = 1;
    const char *sub = path + 16;
    if (strcmp(sub, "/Contents/Key") == 0 || strcmp(sub, "/CommonPrefixes/Prefix") == 0) {
        size_t clean_len = 0;
        char *clean = len <= S3_KEY_MAX ? utf8_valid_dup(text, len, 0, &clean_len) : NULL;
        int same = clean && clean_len == len && memcmp(clean, text, len) == 0;
        free(clean);
        if (len > S3_KEY_MAX || !same || memchr(text, '\0', len)) {
            return s3_list_fail(s, "a key in the listing is not valid UTF-8 of at most 1024 bytes");
        }
        memcpy(s->key, text, len);
        s->key[len] = '\0';
        s->key_len = len;
        s->have_key = 1;
    } else if (strcmp(sub, "/Contents/Size") == 0) {
        uint64_t v = 0;
        if (len == 0 || len > 19 || strspn(text, "0123456789") != len) {
            return s3_list_fail(s, "a size in the listing is not a number");
        }
        for (size_t i = 0; i < len; i++) {
            v = v * 10 + (uint64_t)(text[i] - '0');
        }
        s->size = v;
    } else if (strcmp(sub, "/Contents") == 0 || strcmp(sub, "/CommonPrefixes") == 0) {
        int is_prefix = sub[1] == 'C' && sub[2] == 'o' && sub[3] == 'm';
        if (!s->have_key) {
            return s3_list_fail(s, "an item of the listing has no key");
        }
        struct s3_list_item item = { s->key, s->key_len, is_prefix ? 0 : s->size, is_prefix };
        if (!s->stopped && s->each(&item, s->ud) != 0) {
            s->stopped = 1;
        }
        s->have_key = 0;
        s->size = 0;
    } else if (strcmp(sub, "/IsTruncated") == 0) {
        s->truncated = len == 4 && memcmp(text, "true", 4) == 0;
    } else if (strcmp(sub, "/NextContinuationToken") == 0) {
        free(s->token);
        s->token = len > 0 && len <= 2048 && !memchr(text, '\0', len) ? buf_dup(text, len) : NULL;
        if (!s->token) {
            return s3_list_fail(s, "a bad continuation token in the listing");
        }
    }
    return 0;
}

/* 1 when the listing was stopped by its callback. */
static int s3_list_parse_page(const char *xml, size_t len, s3_list_fn *each, void *ud,
                              char **ret_token, int *ret_stopped, char *err, size_t errlen)
{
    struct s3_list_state *s = calloc(1, sizeof *s);
    int rc = -1;
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    s->each = each;
    s->ud = ud;
    s->err = err;
    s->errlen = errlen;
    if (s3_xml_walk(xml, len, s3_list_node, s, err, errlen) != 0) {
        goto out;
    }
    if (!s->is_list) {
        s3_list_fail(s, "the answer is not a ListBucketResult");
        goto out;
    }
    if (s->truncated && !s->token && !s->stopped) {
        s3_list_fail(s, "the listing is truncated without a continuation token");
        goto out;
    }
    *ret_token = s->truncated && !s->stopped ? s->token : NULL;
    if (*ret_token) {
        s->token = NULL;
    }
    *ret_stopped = s->stopped;
    rc = 0;
out:
    free(s->token);
    free(s);
    return rc;
}

int s3_list_parse(const char *xml, size_t len, s3_list_fn *each, void *ud, char **ret_token,
                  char *err, size_t errlen)
{
    int stopped = 0;
    return s3_list_parse_page(xml, len, each, ud, ret_token, &stopped, err, errlen);
}

/* <Error><Code>X</Code>... : X when it is a short identifier, else "". */
struct s3_code_state {
    char code[S3_CODE_MAX + 1];
};

static int s3_code_node(const char *path, const char *text, size_t len, void *ud)
{
    struct s3_code_state *s = ud;
    static const char ident[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.";
    if (strcmp(path, "Error/Code") == 0 && len > 0 && len <= S3_CODE_MAX &&
        strspn(text, ident) == len) {
        memcpy(s->code, text, len);
        s->code[len] = '\0';
    }
    return 0;
}

static void s3_error_code(const struct buf *answer, char code[S3_CODE_MAX + 1])
{
    struct s3_code_state s;
    char ignored[64];
    memset(&s, 0, sizeof s);
    if (answer->data && answer->len > 0) {
        (void)s3_xml_walk(answer->data, answer->len, s3_code_node, &s, ignored, sizeof ignored);
    }
    memcpy(code, s.code, sizeof s.code);
}

/* ---- requests ------------------------------------------------------------------------------ */

/* AWS's UriEncode: unreserved characters kept, '/' kept when keep_slash, the rest %XX. */
static void s3_uri_encode(struct buf *b, const char *s, size_t len, int keep_slash)
{
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '_' || c == '.' || c == '~' || (c == '/' && keep_slash)) {
            buf_append_byte(b, c);
        } else {
            char pct[3] = { '%', hex[c >> 4], hex[c & 15] };
            buf_append(b, pct, 3);
        }
    }
}

static size_t s3_write(char *data, size_t size, size_t n, void *userdata)
{
    struct s3_req *r = userdata;
    if (buf_append(&r->answer, data, size * n) != BUF_OK) {
        r->too_big = 1;
        return 0; /* aborts the transfer */
    }
    return size * n;
}

static int64_t s3_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static CURL *s3_handle_take(struct s3_mount *m)
{
    pthread_mutex_lock(&m->lock);
    CURL *e = m->idle;
    m->idle = NULL;
    pthread_mutex_unlock(&m->lock);
    if (e) {
        curl_easy_reset(e); /* the options go; the open connection stays */
        return e;
    }
    return curl_easy_init();
}

static void s3_handle_give(struct s3_mount *m, CURL *e)
{
    pthread_mutex_lock(&m->lock);
    if (!m->idle) {
        m->idle = e;
        e = NULL;
    }
    pthread_mutex_unlock(&m->lock);
    if (e) {
        curl_easy_cleanup(e);
    }
}

/* Performs one request: method on path_query (already encoded: "/KEY?a=b"), body (NULL for
 * none), extra a header line or NULL; the answer into r->answer (capped at answer_max), the
 * status into r->status. deadline_ms bounds it (monotonic). 0, or -1 with r's message set. */
static int s3_perform(struct s3_req *r, const char *method, const char *path_query,
                      const char *body, size_t body_len, const char *extra, size_t answer_max,
                      int64_t deadline_ms)
{
    struct s3_mount *m = r->m;
    struct curl_slist *headers = NULL;
    struct buf url;
    unsigned char digest[SHA256_DIGEST_LENGTH];
    char sha_header[32 + 2 * SHA256_DIGEST_LENGTH];
    char sha_hex[2 * SHA256_DIGEST_LENGTH + 1];
    CURL *e = NULL;
    int rc = -1;
    buf_init(&url, 8192);
    buf_reset(&r->answer);
    r->answer.max = answer_max;
    r->too_big = 0;
    r->status = 0;
    r->content_length = -1;

    int64_t left = deadline_ms - s3_now_ms();
    if (left <= 0) {
        s3_fail(r, "timed out after %lld ms", (long long)m->timeout_ms);
        goto out;
    }
    buf_printf(&url, "%s/%s%s", m->endpoint, m->bucket, path_query);
    SHA256((const unsigned char *)(body ? body : ""), body ? body_len : 0, digest);
    hex_encode(digest, sizeof digest, sha_hex);
    snprintf(sha_header, sizeof sha_header, "x-amz-content-sha256: %s", sha_hex);
    const char *lines[] = { sha_header, "Expect:", "Accept:", extra };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        struct curl_slist *l = lines[i] ? curl_slist_append(headers, lines[i]) : headers;
        if (!l) {
            s3_fail(r, "out of memory");
            goto out;
        }
        headers = l;
    }
    if (buf_failed(&url) || !(e = s3_handle_take(m))) {
        s3_fail(r, "out of memory");
        goto out;
    }
    int bad = 0;
    bad |= curl_easy_setopt(e, CURLOPT_URL, url.data) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https") != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https") != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_PROXY, "") != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_PATH_AS_IS, 1L) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                            (long)(left < S3_CONNECT_TIMEOUT_MS ? left : S3_CONNECT_TIMEOUT_MS)) !=
           CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)left) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_USERAGENT, "airlockd") != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_AWS_SIGV4, m->sigv4) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_USERNAME, m->access_key_id) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_PASSWORD, m->secret) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, s3_write) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_WRITEDATA, r) != CURLE_OK;
    if (strcmp(method, "HEAD") == 0) {
        bad |= curl_easy_setopt(e, CURLOPT_NOBODY, 1L) != CURLE_OK;
    } else if (body) {
        /* POSTFIELDS, so curl's payload hash is this body's (see the top) */
        bad |= curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len) != CURLE_OK;
        bad |= curl_easy_setopt(e, CURLOPT_POSTFIELDS, body) != CURLE_OK;
        bad |= curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method) != CURLE_OK;
    } else if (strcmp(method, "GET") != 0) {
        bad |= curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method) != CURLE_OK;
    }
    if (bad) {
        s3_fail(r, "curl refused an option");
        goto out;
    }
    CURLcode code = curl_easy_perform(e);
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &r->status);
    curl_easy_getinfo(e, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &r->content_length);
    if (r->too_big) {
        s3_fail(r, "the answer is over %zu bytes", answer_max);
        goto out;
    }
    switch (code) {
    case CURLE_OK:
        break;
    case CURLE_OPERATION_TIMEDOUT:
        s3_fail(r, "timed out after %lld ms", (long long)m->timeout_ms);
        goto out;
    case CURLE_COULDNT_CONNECT:
        s3_fail(r, "connection refused");
        goto out;
    case CURLE_COULDNT_RESOLVE_HOST:
        s3_fail(r, "cannot resolve the endpoint's host");
        goto out;
    case CURLE_GOT_NOTHING:
        s3_fail(r, "the server closed the connection without an answer");
        goto out;
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
        s3_fail(r, "the server closed the connection mid-answer");
        goto out;
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
        s3_fail(r, "TLS failed (%s)", curl_easy_strerror(code));
        goto out;
    default:
        s3_fail(r, "the request failed (%s)", curl_easy_strerror(code));
        goto out;
    }
    rc = 0;
out:
    if (e) {
        s3_handle_give(m, e);
    }
    curl_slist_free_all(headers);
    buf_done(&url);
    return rc;
}

/* An answer that is not 2xx: AL_MOUNT_NOT_FOUND for a missing key (never a missing bucket),
 * else the error with its status and S3's code. */
static enum al_mount_status s3_judge_status(struct s3_req *r, int not_found_ok)
{
    char code[S3_CODE_MAX + 1];
    s3_error_code(&r->answer, code);
    if (r->status == 404 && not_found_ok && strcmp(code, "NoSuchBucket") != 0) {
        return AL_MOUNT_NOT_FOUND;
    }
    if (strcmp(code, "NoSuchBucket") == 0) {
        s3_fail(r, "HTTP %ld NoSuchBucket: the bucket does not exist", r->status);
    } else if (code[0]) {
        s3_fail(r, "HTTP %ld %s", r->status, code);
    } else {
        s3_fail(r, "HTTP %ld", r->status);
    }
    return AL_MOUNT_ERROR;
}

/* "/KEY" encoded into b. */
static void s3_key_path(struct buf *b, const char *key)
{
    buf_append_byte(b, '/');
    s3_uri_encode(b, key, strlen(key), 1);
}

static int s3_req_init(struct s3_req *r, struct s3_mount *m, const char *op, const char *key,
                       char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    r->m = m;
    r->op = op;
    r->key = key ? key : "";
    r->err = err;
    r->errlen = errlen;
    buf_init(&r->answer, S3_ERROR_BODY_MAX);
    if (err && errlen) {
        err[0] = '\0';
    }
    if (!m || !key) {
        snprintf(err, errlen, "s3: no mount or no key");
        return -1;
    }
    if (strlen(key) > S3_KEY_MAX) {
        s3_fail(r, "the key is over %d bytes", S3_KEY_MAX);
        return -1;
    }
    return 0;
}

/* The common shape of HEAD, PUT, DELETE: one request, no body kept. */
static enum al_mount_status s3_simple(struct s3_mount *m, const char *method, const char *key,
                                      const char *body, size_t len, uint64_t *ret_size, char *err,
                                      size_t errlen)
{
    struct s3_req r;
    struct buf path;
    enum al_mount_status st = AL_MOUNT_ERROR;
    buf_init(&path, 4 * S3_KEY_MAX + 16);
    if (s3_req_init(&r, m, method, key, err, errlen) != 0) {
        goto out;
    }
    if (key[0] == '\0') {
        s3_fail(&r, "an object needs a key");
        goto out;
    }
    s3_key_path(&path, key);
    if (buf_failed(&path)) {
        s3_fail(&r, "out of memory");
        goto out;
    }
    const char *type = body ? "Content-Type: application/octet-stream" : NULL;
    if (s3_perform(&r, method, path.data, body, len, type, S3_ERROR_BODY_MAX,
                   s3_now_ms() + m->timeout_ms) != 0) {
        goto out;
    }
    if (r.status < 200 || r.status > 299) {
        st = s3_judge_status(&r, strcmp(method, "HEAD") == 0);
        goto out;
    }
    if (ret_size) {
        if (r.content_length < 0) {
            s3_fail(&r, "the answer has no Content-Length");
            goto out;
        }
        *ret_size = (uint64_t)r.content_length;
    }
    st = AL_MOUNT_OK;
out:
    buf_done(&path);
    buf_done(&r.answer);
    return st;
}

enum al_mount_status s3_put(struct s3_mount *m, const char *key, const char *data, size_t len,
                            char *err, size_t errlen)
{
    return s3_simple(m, "PUT", key, data ? data : "", len, NULL, err, errlen);
}

enum al_mount_status s3_delete(struct s3_mount *m, const char *key, char *err, size_t errlen)
{
    return s3_simple(m, "DELETE", key, NULL, 0, NULL, err, errlen);
}

enum al_mount_status s3_head(struct s3_mount *m, const char *key, uint64_t *ret_size, char *err,
                             size_t errlen)
{
    uint64_t size = 0;
    enum al_mount_status st = s3_simple(m, "HEAD", key, NULL, 0, &size, err, errlen);
    if (st == AL_MOUNT_OK && ret_size) {
        *ret_size = size;
    }
    return st;
}

enum al_mount_status s3_get(struct s3_mount *m, const char *key, uint64_t offset, uint64_t len,
                            char **ret, size_t *ret_len, char *err, size_t errlen)
{
    struct s3_req r;
    struct buf path;
    char range[64] = "";
    enum al_mount_status st = AL_MOUNT_ERROR;
    buf_init(&path, 4 * S3_KEY_MAX + 16);
    if (s3_req_init(&r, m, "GET", key, err, errlen) != 0) {
        goto out;
    }
    if (!ret || !ret_len || key[0] == '\0') {
        s3_fail(&r, "an object needs a key");
        goto out;
    }
    if (len == 0) {
        st = s3_head(m, key, NULL, err, errlen);
        if (st == AL_MOUNT_OK && !(*ret = calloc(1, 1))) {
            s3_fail(&r, "out of memory");
            st = AL_MOUNT_ERROR;
        }
        *ret_len = 0;
        goto out;
    }
    /* room for an error document too; a 2xx answer longer than asked is refused below */
    size_t want = len < S3_READ_MAX ? (size_t)len : S3_READ_MAX;
    size_t answer_max = want > S3_ERROR_BODY_MAX ? want : S3_ERROR_BODY_MAX;
    if (len == UINT64_MAX || offset > UINT64_MAX - len) {
        if (offset > 0) {
            snprintf(range, sizeof range, "Range: bytes=%llu-", (unsigned long long)offset);
        }
    } else {
        snprintf(range, sizeof range, "Range: bytes=%llu-%llu", (unsigned long long)offset,
                 (unsigned long long)(offset + len - 1));
    }
    s3_key_path(&path, key);
    if (buf_failed(&path)) {
        s3_fail(&r, "out of memory");
        goto out;
    }
    if (s3_perform(&r, "GET", path.data, NULL, 0, range[0] ? range : NULL, answer_max,
                   s3_now_ms() + m->timeout_ms) != 0) {
        goto out;
    }
    if (r.status == 416) {
        /* the offset is at or past the end: nothing to read, as a file read there gives */
        buf_reset(&r.answer);
    } else if (r.status == 200 && offset > 0) {
        s3_fail(&r, "the server ignored the Range header");
        goto out;
    } else if (r.status != 200 && r.status != 206) {
        st = s3_judge_status(&r, 1);
        goto out;
    }
    if (r.answer.len > want) {
        s3_fail(&r, "the server answered more bytes than the range asked");
        goto out;
    }
    size_t n = 0;
    char *data = buf_steal(&r.answer, &n);
    if (!data && !(data = calloc(1, 1))) {
        s3_fail(&r, "out of memory");
        goto out;
    }
    *ret = data;
    *ret_len = n;
    st = AL_MOUNT_OK;
out:
    buf_done(&path);
    buf_done(&r.answer);
    return st;
}

enum al_mount_status s3_list(struct s3_mount *m, const char *prefix, s3_list_fn *each, void *ud,
                             char *err, size_t errlen)
{
    struct s3_req r;
    struct buf query;
    char *token = NULL;
    char parse_err[160];
    enum al_mount_status st = AL_MOUNT_ERROR;
    buf_init(&query, 4 * S3_KEY_MAX + 3 * 2048 + 128);
    if (s3_req_init(&r, m, "LIST", prefix, err, errlen) != 0) {
        goto out;
    }
    if (!each) {
        s3_fail(&r, "no callback");
        goto out;
    }
    int64_t deadline = s3_now_ms() + m->timeout_ms;
    for (unsigned page = 0;; page++) {
        int stopped = 0;
        char *next = NULL;
        if (page >= S3_LIST_PAGES_MAX) {
            s3_fail(&r, "the listing is over %u pages", S3_LIST_PAGES_MAX);
            goto out;
        }
        /* the canonical query: names sorted, values encoded (libcurl 7.88 signs it as given) */
        buf_reset(&query);
        buf_append_byte(&query, '?');
        if (token) {
            buf_append_str(&query, "continuation-token=");
            s3_uri_encode(&query, token, strlen(token), 0);
            buf_append_byte(&query, '&');
        }
        buf_append_str(&query, "delimiter=%2F&list-type=2");
        if (prefix[0]) {
            buf_append_str(&query, "&prefix=");
            s3_uri_encode(&query, prefix, strlen(prefix), 0);
        }
        if (buf_failed(&query)) {
            s3_fail(&r, "out of memory");
            goto out;
        }
        if (s3_perform(&r, "GET", query.data, NULL, 0, NULL, S3_LIST_PAGE_MAX, deadline) != 0) {
            goto out;
        }
        if (r.status != 200) {
            st = s3_judge_status(&r, 0);
            goto out;
        }
        if (s3_list_parse_page(r.answer.data ? r.answer.data : "", r.answer.len, each, ud, &next,
                               &stopped, parse_err, sizeof parse_err) != 0) {
            s3_fail(&r, "%s", parse_err);
            goto out;
        }
        free(token);
        token = next;
        if (stopped || !token) {
            break;
        }
    }
    st = AL_MOUNT_OK;
out:
    free(token);
    buf_done(&query);
    buf_done(&r.answer);
    return st;
}

/* ---- the mount backend --------------------------------------------------------------------- */

static int s3_is_dir_key(const char *key)
{
    size_t n = strlen(key);
    return n == 0 || key[n - 1] == '/';
}

static int s3_any(const struct s3_list_item *item, void *ud)
{
    (void)item;
    *(int *)ud = 1;
    return 1; /* one is enough */
}

/* "key/" (or key itself when it is a directory key), malloc'd; NULL when out of memory. */
static char *s3_dir_prefix(const char *key)
{
    size_t n = strlen(key);
    int slash = !s3_is_dir_key(key);
    char *p = malloc(n + 2);
    if (p) {
        memcpy(p, key, n);
        p[n] = '/';
        p[n + slash] = '\0';
    }
    return p;
}

static enum al_mount_status s3_ops_stat(void *ud, const char *key, uint64_t *ret_size,
                                        int *ret_is_dir, char *err, size_t errlen)
{
    struct s3_mount *m = ud;
    char *dir = NULL;
    int any = 0;
    uint64_t size = 0;
    enum al_mount_status st = AL_MOUNT_ERROR;
    if (!key) {
        snprintf(err, errlen, "s3: no key");
        return AL_MOUNT_ERROR;
    }
    if (!s3_is_dir_key(key)) {
        st = s3_head(m, key, &size, err, errlen);
        if (st != AL_MOUNT_NOT_FOUND) {
            if (st == AL_MOUNT_OK) {
                *ret_size = size;
                *ret_is_dir = 0;
            }
            return st;
        }
    }
    /* a directory: keys below it (the entry's own prefix always is one; the listing also
     * tells a missing bucket from a missing key) */
    if (!(dir = s3_dir_prefix(key))) {
        snprintf(err, errlen, "out of memory");
        return AL_MOUNT_ERROR;
    }
    st = s3_list(m, dir, s3_any, &any, err, errlen);
    if (st == AL_MOUNT_OK && !any && !s3_is_dir_key(key)) {
        snprintf(err, errlen, "no such key");
        st = AL_MOUNT_NOT_FOUND;
    }
    if (st == AL_MOUNT_OK) {
        *ret_size = 0;
        *ret_is_dir = 1;
    }
    free(dir);
    return st;
}

static enum al_mount_status s3_ops_read(void *ud, const char *key, uint64_t offset, uint64_t len,
                                        char **ret, size_t *ret_len, char *err, size_t errlen)
{
    return s3_get(ud, key, offset, len, ret, ret_len, err, errlen);
}

struct s3_children {
    size_t prefix_len;
    al_mount_list_fn *each;
    void *list_ud;
    size_t count;
};

static int s3_child(const struct s3_list_item *item, void *ud)
{
    struct s3_children *c = ud;
    if (item->key_len < c->prefix_len) {
        return 0; /* not below the prefix: a server's mistake, skipped */
    }
    const char *name = item->key + c->prefix_len;
    size_t len = item->key_len - c->prefix_len;
    if (item->is_prefix && len > 0 && name[len - 1] == '/') {
        len--;
    }
    if (len == 0 || memchr(name, '/', len) || (len == 1 && name[0] == '.') ||
        (len == 2 && name[0] == '.' && name[1] == '.')) {
        return 0; /* no single path segment: no name a guest could use */
    }
    char one[S3_KEY_MAX + 1];
    memcpy(one, name, len);
    one[len] = '\0';
    struct al_mount_entry entry = { one, item->size, item->is_prefix };
    c->each(&entry, c->list_ud);
    c->count++;
    return 0;
}

static enum al_mount_status s3_ops_list(void *ud, const char *key, al_mount_list_fn *each,
                                        void *list_ud, char *err, size_t errlen)
{
    struct s3_mount *m = ud;
    char *dir = NULL;
    enum al_mount_status st = AL_MOUNT_ERROR;
    if (!key || !each) {
        snprintf(err, errlen, "s3: no key or no callback");
        return AL_MOUNT_ERROR;
    }
    if (!(dir = s3_dir_prefix(key))) {
        snprintf(err, errlen, "out of memory");
        return AL_MOUNT_ERROR;
    }
    struct s3_children c = { strlen(dir), each, list_ud, 0 };
    st = s3_list(m, dir, s3_child, &c, err, errlen);
    if (st == AL_MOUNT_OK && c.count == 0 && !s3_is_dir_key(key)) {
        snprintf(err, errlen, "no such directory");
        st = AL_MOUNT_NOT_FOUND;
    }
    free(dir);
    return st;
}

static enum al_mount_status s3_ops_write(void *ud, const char *key, const char *data, size_t len,
                                         char *err, size_t errlen)
{
    return s3_put(ud, key, data, len, err, errlen);
}

static enum al_mount_status s3_ops_remove(void *ud, const char *key, char *err, size_t errlen)
{
    return s3_delete(ud, key, err, errlen);
}

const struct al_mount_ops s3_mount_ops = {
    .version = AL_MOUNT_OPS_VERSION,
    .stat = s3_ops_stat,
    .read = s3_ops_read,
    .list = s3_ops_list,
    .write = s3_ops_write,
    .remove = s3_ops_remove,
};
