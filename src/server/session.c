/*
 * session.c - sessions of the web UI (session.h). The token is 256 random bits; the store sees
 * only its SHA-256, so a copy of the database signs nobody in. Each request reads the session and
 * its principal again: a logout, an expiry, a principal removed or disabled ends it at the next
 * request, on every node. The grants group_roles gave at sign-in are added to the principal's
 * own for as long as the session lasts; a new sign-in evaluates the groups again. A principal
 * linked to another identity since ends the sessions of the one it was linked to.
 */
#include "session.h"

#include <openssl/crypto.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <string.h>

#include "hex.h"

int session_token_new(char ret_token[SESSION_TOKEN_LEN + 1], char ret_sha256[65])
{
    unsigned char raw[SESSION_TOKEN_LEN / 2];
    if (RAND_bytes(raw, sizeof raw) != 1) {
        return -1;
    }
    hex_encode(raw, sizeof raw, ret_token);
    OPENSSL_cleanse(raw, sizeof raw);
    session_token_sha256(ret_token, ret_sha256);
    return 0;
}

void session_token_sha256(const char *token, char ret[65])
{
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)token, strlen(token), md);
    hex_encode(md, sizeof md, ret);
}

void session_csrf(const char *token, char ret[SESSION_CSRF_LEN + 1])
{
    unsigned char mac[SHA256_DIGEST_LENGTH];
    unsigned int n = 0;
    static const char label[] = "airlock session csrf";
    HMAC(EVP_sha256(), token, (int)strlen(token), (const unsigned char *)label, sizeof label - 1,
         mac, &n);
    hex_encode(mac, sizeof mac, ret);
}

int session_cookie_get(const char *header, const char *name, char *out, size_t cap)
{
    size_t nlen = strlen(name);
    const char *p = header;
    while (p && *p) {
        p += strspn(p, " \t;");
        const char *end = strchr(p, ';');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len > nlen && memcmp(p, name, nlen) == 0 && p[nlen] == '=') {
            size_t vlen = len - nlen - 1;
            while (vlen > 0 && (p[nlen + vlen] == ' ' || p[nlen + vlen] == '\t')) {
                vlen--;
            }
            if (vlen == 0 || vlen >= cap) {
                return -1;
            }
            memcpy(out, p + nlen + 1, vlen);
            out[vlen] = '\0';
            return 0;
        }
        p = end;
    }
    return -1;
}

void session_group_grants(const struct oidc_config *cfg, const struct oidc_claims *claims,
                          struct buf *out)
{
    int first = 1;
    buf_append_str(out, "[");
    for (size_t i = 0; i < cfg->ngroup_roles; i++) {
        const struct oidc_group_role *gr = &cfg->group_roles[i];
        for (size_t g = 0; g < claims->ngroups; g++) {
            if (strcmp(claims->groups[g], gr->group) == 0) {
                buf_append_str(out, first ? "[" : ",[");
                json_write_string(out, gr->role, strlen(gr->role));
                buf_append_str(out, ",");
                json_write_string(out, gr->department, strlen(gr->department));
                buf_append_str(out, "]");
                first = 0;
                break;
            }
        }
    }
    buf_append_str(out, "]");
}

struct session_found {
    char principal[STORE_NAME_MAX + 1];
    char identity[sizeof((struct auth_principal *)0)->identity];
    char grants[4096];
    int64_t expires_ms;
    int found;
};

static int session_found_fn(void *userdata, const struct store_session *sess)
{
    struct session_found *f = userdata;
    if (sess->principal && sess->identity && sess->grants &&
        strlen(sess->principal) < sizeof f->principal &&
        strlen(sess->identity) < sizeof f->identity && strlen(sess->grants) < sizeof f->grants) {
        snprintf(f->principal, sizeof f->principal, "%s", sess->principal);
        snprintf(f->identity, sizeof f->identity, "%s", sess->identity);
        snprintf(f->grants, sizeof f->grants, "%s", sess->grants);
        f->expires_ms = sess->expires_ms;
        f->found = 1;
    }
    return 1;
}

/* 1 in *userdata when the principal is still linked to the identity the session signed in. */
struct session_link {
    const char *identity;
    int linked;
};

static int session_linked_fn(void *userdata, const struct store_principal *p)
{
    struct session_link *l = userdata;
    l->linked = p->identity && strcmp(p->identity, l->identity) == 0;
    return 1;
}

/* Adds the session's group grants (its JSON) to who's. */
static void session_add_grants(struct auth_principal *who, const char *grants)
{
    struct json_doc *doc = NULL;
    struct al_error err;
    memset(&err, 0, sizeof err);
    if (json_parse(grants, strlen(grants), 4, &doc, &err) != AL_OK) {
        return; /* kept by this file only: a row that does not parse grants nothing more */
    }
    const struct json_node *root = json_root(doc);
    for (const struct json_node *g = root->type == JSON_ARRAY ? root->child : NULL; g;
         g = g->next) {
        const struct json_node *role = g->type == JSON_ARRAY ? g->child : NULL;
        const struct json_node *dept = role ? role->next : NULL;
        if (dept && role->type == JSON_STRING && dept->type == JSON_STRING) {
            (void)gov_principal_grant(&who->gov, gov_role_bit(role->str), dept->str);
        }
    }
    json_doc_free(doc);
}

enum auth_result session_authenticate(struct store *s, const char *token, int64_t now_ms,
                                      struct auth_principal *ret, char *why)
{
    char hash[65];
    struct session_found f;
    memset(&f, 0, sizeof f);
    session_token_sha256(token, hash);
    enum store_rc rc = s->ops->session_get(s, hash, session_found_fn, &f);
    if (rc == STORE_NOT_FOUND || (rc == STORE_OK && (!f.found || f.expires_ms <= now_ms))) {
        snprintf(why, AUTH_WHY_MAX, "unknown, ended or expired session");
        return AUTH_UNAUTHENTICATED;
    }
    if (rc != STORE_OK) {
        snprintf(why, AUTH_WHY_MAX, "store: %s", s->ops->errmsg(s));
        return AUTH_STORE_FAILED;
    }
    /* one rule for keys and sessions: a principal removed or disabled signs in nobody */
    enum auth_result ar = auth_principal_load(s, f.principal, ret, why);
    if (ar != AUTH_OK) {
        return ar;
    }
    /* the principal linked to another identity since (or removed and made again for someone
     * else): the session of the person it was linked to ends */
    struct session_link link = { f.identity, 0 };
    rc = s->ops->principal_get(s, f.principal, session_linked_fn, &link);
    if (rc != STORE_OK && rc != STORE_NOT_FOUND) {
        snprintf(why, AUTH_WHY_MAX, "store: %s", s->ops->errmsg(s));
        return AUTH_STORE_FAILED;
    }
    if (!link.linked) {
        snprintf(why, AUTH_WHY_MAX, "principal %s is no longer linked to the session's identity",
                 f.principal);
        return AUTH_UNAUTHENTICATED;
    }
    session_add_grants(ret, f.grants);
    ret->session = 1;
    snprintf(ret->identity, sizeof ret->identity, "%s", f.identity);
    /* the rate limit's bucket of a session: its hash's first digits, as a key's prefix */
    snprintf(ret->key_prefix, sizeof ret->key_prefix, "%.*s", AUTH_PREFIX_LEN, hash);
    session_csrf(token, ret->csrf);
    memcpy(ret->session_sha256, hash, sizeof hash);
    return AUTH_OK;
}
