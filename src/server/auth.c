/*
 * auth.c - API keys (generation, hashing, constant-time comparison) and the permission check.
 * A presented key is hashed and compared with CRYPTO_memcmp against the stored hash found by
 * its prefix, so neither timing nor a database read reveals a key. Secrets are cleansed once
 * used. Nothing here writes the audit log: the router records denials where it answers them.
 * A principal's grants are a struct gov_principal: auth_check and the handlers' rules
 * (src/gov/rules.h) read the same grants the same way.
 */
#include "auth.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <string.h>

#include "hex.h"

_Static_assert(AUTH_GRANTS_MAX == GOV_GRANTS_MAX && STORE_NAME_MAX == GOV_NAME_MAX,
               "a principal's grants are a gov_principal");

unsigned auth_role_bit(const char *name)
{
    return gov_role_bit(name);
}

static int auth_is_hex(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) {
            return 0;
        }
    }
    return 1;
}

int auth_key_new(char *ret_key, char *ret_prefix, unsigned char ret_hash[STORE_HASH_LEN])
{
    unsigned char raw[AUTH_PREFIX_LEN / 2 + 32];
    char hex[2 * sizeof raw + 1];
    if (RAND_bytes(raw, sizeof raw) != 1) {
        return -1;
    }
    hex_encode(raw, sizeof raw, hex);
    OPENSSL_cleanse(raw, sizeof raw);
    snprintf(ret_key, AUTH_KEY_MAX + 1, "ak_%.*s_%s", AUTH_PREFIX_LEN, hex, hex + AUTH_PREFIX_LEN);
    OPENSSL_cleanse(hex, sizeof hex);
    return auth_key_digest(ret_key, ret_prefix, ret_hash);
}

int auth_key_digest(const char *key, char *ret_prefix, unsigned char ret_hash[STORE_HASH_LEN])
{
    size_t len = strnlen(key, AUTH_KEY_MAX + 1);
    if (len < AUTH_KEY_MIN || len > AUTH_KEY_MAX) {
        return -1;
    }
    for (size_t i = 0; i < len; i++) {
        if (key[i] < 0x21 || key[i] > 0x7e) {
            return -1;
        }
    }
    SHA256((const unsigned char *)key, len, ret_hash);
    char hex[2 * STORE_HASH_LEN + 1];
    const char *prefix = key + 3;
    if (len != 3 + AUTH_PREFIX_LEN + 1 + 64 || memcmp(key, "ak_", 3) != 0 ||
        key[3 + AUTH_PREFIX_LEN] != '_' || !auth_is_hex(key + 3, AUTH_PREFIX_LEN)) {
        hex_encode(ret_hash, STORE_HASH_LEN, hex);
        prefix = hex;
    }
    memcpy(ret_prefix, prefix, AUTH_PREFIX_LEN);
    ret_prefix[AUTH_PREFIX_LEN] = '\0';
    return 0;
}

struct auth_found {
    struct auth_principal *who;
    int disabled;
};

static int auth_set_kind(void *userdata, const struct store_principal *p)
{
    struct auth_found *f = userdata;
    snprintf(f->who->kind, sizeof f->who->kind, "%s", p->kind);
    f->disabled = p->disabled;
    return 0;
}

enum store_rc auth_key_active(struct store *s, const char *prefix, const char *principal)
{
    char holder[STORE_NAME_MAX + 1] = "";
    unsigned char hash[STORE_HASH_LEN];
    enum store_rc rc = s->ops->key_lookup(s, prefix, holder, hash);
    OPENSSL_cleanse(hash, sizeof hash);
    if (rc == STORE_OK && strcmp(holder, principal) != 0) {
        rc = STORE_NOT_FOUND;
    }
    if (rc == STORE_OK) {
        /* a disabled principal's keys are as good as revoked */
        struct auth_principal who;
        struct auth_found found = { &who, 0 };
        rc = s->ops->principal_get(s, principal, auth_set_kind, &found);
        if (rc == STORE_OK && found.disabled) {
            rc = STORE_NOT_FOUND;
        }
    }
    return rc;
}

/* A grant of an unknown role, past AUTH_GRANTS_MAX or of a too long department is not kept
 * (gov_principal_grant refuses it): it grants nothing. */
static int auth_add_grant(void *userdata, const struct store_grant *g)
{
    (void)gov_principal_grant(userdata, gov_role_bit(g->role), g->department);
    return 0;
}

enum store_rc auth_grants(struct store *s, const char *name, struct gov_principal *ret)
{
    (void)gov_principal_init(ret, name); /* a stored name always fits; a longer one owns nothing */
    return s->ops->role_list(s, name, auth_add_grant, ret);
}

enum auth_result auth_principal_load(struct store *s, const char *name, struct auth_principal *ret,
                                     char *why)
{
    struct auth_principal who;
    struct auth_found found = { &who, 0 };
    memset(&who, 0, sizeof who);
    if (strlen(name) > STORE_NAME_MAX) {
        snprintf(why, AUTH_WHY_MAX, "no principal %.64s", name);
        return AUTH_UNAUTHENTICATED;
    }
    memcpy(who.name, name, strlen(name) + 1);
    enum store_rc rc = s->ops->principal_get(s, name, auth_set_kind, &found);
    if (rc == STORE_NOT_FOUND) {
        snprintf(why, AUTH_WHY_MAX, "no principal %s", name);
        return AUTH_UNAUTHENTICATED;
    }
    if (rc == STORE_OK && found.disabled) {
        snprintf(why, AUTH_WHY_MAX, "principal %s is disabled", name);
        return AUTH_UNAUTHENTICATED;
    }
    if (rc == STORE_OK) {
        rc = auth_grants(s, name, &who.gov);
    }
    if (rc != STORE_OK) {
        snprintf(why, AUTH_WHY_MAX, "store: %s", s->ops->errmsg(s));
        return AUTH_STORE_FAILED;
    }
    *ret = who;
    return AUTH_OK;
}

enum auth_result auth_authenticate(struct store *s, const char *authorization,
                                   struct auth_principal *ret, char *why)
{
    char prefix[AUTH_PREFIX_LEN + 1];
    unsigned char hash[STORE_HASH_LEN];
    unsigned char stored[STORE_HASH_LEN];
    char name[STORE_NAME_MAX + 1];
    enum auth_result result = AUTH_UNAUTHENTICATED;

    if (!authorization) {
        snprintf(why, AUTH_WHY_MAX, "no Authorization header");
        goto out;
    }
    if (strncmp(authorization, "Bearer ", 7) != 0) {
        snprintf(why, AUTH_WHY_MAX, "Authorization is not \"Bearer KEY\"");
        goto out;
    }
    if (auth_key_digest(authorization + 7, prefix, hash) != 0) {
        snprintf(why, AUTH_WHY_MAX, "malformed key");
        goto out;
    }
    enum store_rc rc = s->ops->key_lookup(s, prefix, name, stored);
    if (rc == STORE_NOT_FOUND || (rc == STORE_OK && CRYPTO_memcmp(hash, stored, sizeof hash))) {
        snprintf(why, AUTH_WHY_MAX, "unknown or revoked key %s", prefix);
        goto out;
    }
    if (rc != STORE_OK) {
        snprintf(why, AUTH_WHY_MAX, "store: %s", s->ops->errmsg(s));
        result = AUTH_STORE_FAILED;
        goto out;
    }
    /* the key is good: whether its holder may act is the principal's own check */
    result = auth_principal_load(s, name, ret, why);
    if (result == AUTH_OK) {
        memcpy(ret->key_prefix, prefix, sizeof prefix);
    }
out:
    OPENSSL_cleanse(hash, sizeof hash);
    OPENSSL_cleanse(stored, sizeof stored);
    return result;
}

static void auth_roles_text(unsigned roles, char *out, size_t len)
{
    size_t used = 0;
    out[0] = '\0';
    for (unsigned bit = 1; bit <= AUTH_ROLE_AGENT; bit <<= 1) {
        if ((roles & bit) && used < len) {
            int n = snprintf(out + used, len - used, "%s%s", used ? "|" : "", gov_role_name(bit));
            used += n > 0 ? (size_t)n : 0;
        }
    }
}

enum auth_result auth_check(const struct auth_principal *who, const struct auth_rule *rule,
                            const char *department, char *why)
{
    char roles[64];
    if (rule->scope == AUTH_PUBLIC || rule->scope == AUTH_PRINCIPAL) {
        return AUTH_OK;
    }
    int anywhere =
            rule->scope == AUTH_ANY_DEPARTMENT || (rule->scope == AUTH_RESOURCE && !department);
    /* a department rule without a department is met by a grant for every department only */
    const char *where = department ? department : GOV_EVERYWHERE;
    if (gov_holds(&who->gov, rule->roles, anywhere ? NULL : where)) {
        return AUTH_OK;
    }
    auth_roles_text(rule->roles, roles, sizeof roles);
    if ((rule->scope == AUTH_DEPARTMENT || rule->scope == AUTH_RESOURCE) && department) {
        snprintf(why, AUTH_WHY_MAX, "%s needs role %s in department %s", who->name, roles,
                 department);
    } else {
        snprintf(why, AUTH_WHY_MAX, "%s needs role %s", who->name, roles);
    }
    return AUTH_FORBIDDEN;
}
