/*
 * workspace_tar.c - a workspace as a tar and back (al_workspace_tar, al_workspace_load_tar).
 *
 * Out: ustar, one header per directory and file of the tree (mounts and what was written into
 * them excluded), in path order so a directory comes before its contents; a name that does not
 * fit ustar's 100 bytes, or is not ASCII, gets a pax header ('x') with its path. The size is
 * computed first and the archive written into one allocation: no copy grows with the tree.
 *
 * In: the archive is untrusted. Every header's checksum is verified; only regular files,
 * directories and the pax ('x', 'g') and GNU long-name ('L') extensions are accepted - links,
 * devices and FIFOs are refused, never skipped; names are normalized and must stay inside the
 * root; sizes, the member count and the totals are checked against the manifest's limits
 * before anything is copied; a member cut short fails the whole load. The new tree is built
 * apart (sorted once, O(n log n)) and swapped in only when everything passed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "workspace.h"

#define TAR_BLOCK     512u
#define TAR_PAX_MAX   (64u * 1024) /* bytes of one pax or long-name record set */
#define TAR_NAME_MAX  4096u
#define TAR_EXTRA_DIR 1024u /* directory members allowed beyond the files limit */

/* ------------------------------------------------------------------ writing */

static int needs_pax(const char *name, size_t len)
{
    if (len > 99) {
        return 1;
    }
    for (size_t i = 0; i < len; i++) {
        if ((unsigned char)name[i] >= 0x80 || (unsigned char)name[i] < 0x20) {
            return 1;
        }
    }
    return 0;
}

/* The pax record "N path=NAME\n", N counting its own digits. */
static size_t pax_record_len(size_t name_len)
{
    size_t body = strlen(" path=") + name_len + 1;
    size_t n = body + 1;
    for (;;) {
        char digits[24];
        size_t d = (size_t)snprintf(digits, sizeof digits, "%zu", n);
        if (body + d == n) {
            return n;
        }
        n = body + d;
    }
}

static size_t padded(size_t n)
{
    return (n + TAR_BLOCK - 1) / TAR_BLOCK * TAR_BLOCK;
}

static void header(char *h, const char *name, size_t name_len, char type, size_t size)
{
    memset(h, 0, TAR_BLOCK);
    memcpy(h, name, name_len < 100 ? name_len : 99);
    memcpy(h + 100, type == '5' ? "0000755" : "0000644", 7);
    memcpy(h + 108, "0000000", 7);
    memcpy(h + 116, "0000000", 7);
    snprintf(h + 124, 12, "%011llo", (unsigned long long)size);
    memcpy(h + 136, "00000000000", 11);
    h[156] = type;
    memcpy(h + 257, "ustar", 6); /* with its NUL */
    memcpy(h + 263, "00", 2);
    memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (size_t i = 0; i < TAR_BLOCK; i++) {
        sum += (unsigned char)h[i];
    }
    snprintf(h + 148, 8, "%06o", sum);
    h[155] = ' ';
}

static int own(const struct ws_node *n)
{
    return n->mount < 0 && !n->entry;
}

enum al_code al_workspace_tar(const struct al_workspace *ws, char **ret, size_t *ret_len,
                              struct al_error *reterr)
{
    if (!ws || !ret || !ret_len) {
        return error_set(reterr, AL_CONFIG_ERROR, "al_workspace_tar: NULL argument");
    }
    ws_thread_drain((struct al_workspace *)ws);
    size_t total = 2 * TAR_BLOCK;
    for (size_t i = 0; i < ws->nnodes; i++) {
        const struct ws_node *n = ws->nodes[i];
        if (!own(n)) {
            continue;
        }
        size_t name_len = n->path_len + (n->is_dir ? 1 : 0);
        if (needs_pax(n->path, name_len)) {
            total += TAR_BLOCK + padded(pax_record_len(name_len));
        }
        total += TAR_BLOCK + (n->is_dir ? 0 : padded(n->len));
    }
    char *out = calloc(1, total);
    if (!out) {
        return error_set(reterr, AL_INTERNAL_ERROR, "out of memory for a %zu-byte tar", total);
    }
    size_t pos = 0;
    char name[TAR_NAME_MAX + 2];
    for (size_t i = 0; i < ws->nnodes; i++) {
        const struct ws_node *n = ws->nodes[i];
        if (!own(n)) {
            continue;
        }
        size_t name_len = n->path_len;
        memcpy(name, n->path, name_len);
        if (n->is_dir) {
            name[name_len++] = '/';
        }
        name[name_len] = '\0';
        if (needs_pax(name, name_len)) {
            size_t rec = pax_record_len(name_len);
            header(out + pos, "PaxHeader", 9, 'x', rec);
            pos += TAR_BLOCK;
            int k = snprintf(out + pos, rec + 1, "%zu path=", rec);
            memcpy(out + pos + k, name, name_len);
            out[pos + rec - 1] = '\n';
            pos += padded(rec);
        }
        header(out + pos, name, name_len, n->is_dir ? '5' : '0', n->is_dir ? 0 : n->len);
        pos += TAR_BLOCK;
        if (!n->is_dir && n->len) {
            memcpy(out + pos, n->data, n->len);
            pos += padded(n->len);
        }
    }
    *ret = out;
    *ret_len = total;
    return AL_OK;
}

/* ------------------------------------------------------------------ reading */

/* An octal field (NUL or space ended); -1 when malformed (base-256 included). */
static int octal(const char *f, size_t n, uint64_t *ret)
{
    size_t i = 0;
    while (i < n && f[i] == ' ') {
        i++;
    }
    uint64_t v = 0;
    int digits = 0;
    for (; i < n && f[i] >= '0' && f[i] <= '7'; i++, digits++) {
        if (v > (UINT64_MAX >> 3)) {
            return -1;
        }
        v = v << 3 | (uint64_t)(f[i] - '0');
    }
    for (; i < n; i++) {
        if (f[i] != ' ' && f[i] != '\0') {
            return -1;
        }
    }
    *ret = v;
    return digits ? 0 : -1;
}

static int checksum_ok(const unsigned char *h)
{
    uint64_t want;
    if (octal((const char *)h + 148, 8, &want) != 0) {
        return 0;
    }
    uint64_t sum = 0;
    for (size_t i = 0; i < TAR_BLOCK; i++) {
        sum += i >= 148 && i < 156 ? ' ' : h[i];
    }
    return sum == want;
}

static int zero_block(const char *b)
{
    for (size_t i = 0; i < TAR_BLOCK; i++) {
        if (b[i]) {
            return 0;
        }
    }
    return 1;
}

/* A member's name normalized into out (no '.', empty segments or trailing '/'); -1 when it is
 * absolute, has '..' or a NUL, or is empty. */
static int clean_name(const char *in, size_t len, char *out, size_t *ret_len)
{
    if (len == 0 || len > TAR_NAME_MAX || in[0] == '/' || memchr(in, '\0', len)) {
        return -1;
    }
    size_t n = 0;
    size_t i = 0;
    while (i < len) {
        size_t s = i;
        while (i < len && in[i] != '/') {
            i++;
        }
        size_t slen = i - s;
        i++;
        if (slen == 0 || (slen == 1 && in[s] == '.')) {
            continue;
        }
        if (slen == 2 && in[s] == '.' && in[s + 1] == '.') {
            return -1;
        }
        if (n) {
            out[n++] = '/';
        }
        memcpy(out + n, in + s, slen);
        n += slen;
    }
    if (n == 0) {
        return -1;
    }
    out[n] = '\0';
    *ret_len = n;
    return 0;
}

/* Reads pax records; `path`/`size` overrides for the next member. -1 when malformed. */
static int pax_records(const char *d, size_t len, char *path, size_t *path_len, int *has_path,
                       uint64_t *size, int *has_size)
{
    size_t i = 0;
    while (i < len) {
        size_t rec = 0;
        size_t j = i;
        while (j < len && d[j] >= '0' && d[j] <= '9' && rec < len) {
            rec = rec * 10 + (size_t)(d[j] - '0');
            j++;
        }
        if (j == i || j >= len || d[j] != ' ' || rec == 0 || rec > len - i ||
            d[i + rec - 1] != '\n') {
            return -1;
        }
        const char *kv = d + j + 1;
        size_t kvlen = i + rec - 1 - (j + 1);
        const char *eq = memchr(kv, '=', kvlen);
        if (!eq) {
            return -1;
        }
        size_t klen = (size_t)(eq - kv);
        const char *v = eq + 1;
        size_t vlen = kvlen - klen - 1;
        if (klen == 4 && memcmp(kv, "path", 4) == 0) {
            if (vlen > TAR_NAME_MAX) {
                return -1;
            }
            memcpy(path, v, vlen);
            path[vlen] = '\0';
            *path_len = vlen;
            *has_path = 1;
        } else if (klen == 4 && memcmp(kv, "size", 4) == 0) {
            uint64_t s = 0;
            if (vlen == 0 || vlen > 19) {
                return -1;
            }
            for (size_t k = 0; k < vlen; k++) {
                if (v[k] < '0' || v[k] > '9') {
                    return -1;
                }
                s = s * 10 + (uint64_t)(v[k] - '0');
            }
            *size = s;
            *has_size = 1;
        } else if ((klen == 8 && memcmp(kv, "linkpath", 8) == 0)) {
            return -1; /* a link target: no link is accepted */
        }
        i += rec;
    }
    return 0;
}

struct staged {
    struct ws_node **v;
    size_t n;
    size_t cap;
};

static int stage(struct staged *s, const char *path, size_t len, int is_dir, const char *data,
                 size_t dlen)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 256;
        struct ws_node **v = realloc(s->v, cap * sizeof *v);
        if (!v) {
            return -1;
        }
        s->v = v;
        s->cap = cap;
    }
    struct ws_node *n = calloc(1, sizeof *n);
    if (!n || !(n->path = malloc(len + 1))) {
        free(n);
        return -1;
    }
    memcpy(n->path, path, len);
    n->path[len] = '\0';
    n->path_len = len;
    n->is_dir = is_dir;
    n->mount = -1;
    if (!is_dir && dlen) {
        if (!(n->data = malloc(dlen))) {
            ws_node_free(n);
            return -1;
        }
        memcpy(n->data, data, dlen);
        n->len = dlen;
    }
    s->v[s->n++] = n;
    return 0;
}

static void staged_free(struct staged *s)
{
    for (size_t i = 0; i < s->n; i++) {
        ws_node_free(s->v[i]);
    }
    free(s->v);
}

/* Sort by path; among equal paths the later member last (the index breaks ties). */
static int staged_cmp(const void *a, const void *b)
{
    const struct ws_node *x = *(struct ws_node *const *)a;
    const struct ws_node *y = *(struct ws_node *const *)b;
    size_t n = x->path_len < y->path_len ? x->path_len : y->path_len;
    int c = memcmp(x->path, y->path, n);
    if (c == 0 && x->path_len != y->path_len) {
        c = x->path_len < y->path_len ? -1 : 1;
    }
    if (c == 0) {
        /* `entry` holds the member's order while staged */
        c = x->entry < y->entry ? -1 : x->entry > y->entry;
    }
    return c;
}

static int collides_with_mount(const struct al_workspace *ws, const char *path, size_t len,
                               int is_dir)
{
    for (size_t i = 0; i < ws->nentries; i++) {
        const char *e = ws->entries[i].path;
        size_t elen = strlen(e);
        if (len >= elen && memcmp(path, e, elen) == 0 && (len == elen || path[elen] == '/')) {
            return 1; /* the mount entry or below it */
        }
        if (!is_dir && elen > len && memcmp(path, e, len) == 0 && e[len] == '/') {
            return 1; /* a file where the entry needs a directory */
        }
    }
    return 0;
}

enum al_code al_workspace_load_tar(struct al_workspace *ws, const char *tar, size_t len,
                                   struct al_error *reterr)
{
    if (!ws || (!tar && len)) {
        return error_set(reterr, AL_CONFIG_ERROR, "al_workspace_load_tar: NULL argument");
    }
    ws_thread_drain(ws);
    enum al_code rc = AL_OK;
    struct staged s = { 0 };
    char *pax_path = malloc(TAR_NAME_MAX + 1);
    char *name = malloc(TAR_NAME_MAX + 1);
    char *clean = malloc(TAR_NAME_MAX + 1);
    size_t pax_len = 0;
    int has_pax_path = 0;
    uint64_t pax_size = 0;
    int has_pax_size = 0;
    uint64_t files = 0;
    uint64_t bytes = 0;
    uint64_t members = 0;
    size_t pos = 0;
    if (!pax_path || !name || !clean) {
        rc = error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
        goto out;
    }
    for (;;) {
        if (len - pos < TAR_BLOCK) {
            if (pos == len) {
                break; /* no end-of-archive blocks: accepted at a member boundary */
            }
            rc = error_set(reterr, AL_CONFIG_ERROR, "snapshot: the tar is truncated");
            goto out;
        }
        const char *h = tar + pos;
        if (zero_block(h)) {
            break;
        }
        if (!checksum_ok((const unsigned char *)h)) {
            rc = error_set(reterr, AL_CONFIG_ERROR,
                           "snapshot: a tar header at byte %zu has a bad checksum", pos);
            goto out;
        }
        uint64_t size;
        if (octal(h + 124, 12, &size) != 0) {
            rc = error_set(reterr, AL_CONFIG_ERROR,
                           "snapshot: a tar header at byte %zu has a malformed size", pos);
            goto out;
        }
        char type = h[156];
        if (has_pax_size && type != 'x' && type != 'g' && type != 'L') {
            size = pax_size;
        }
        pos += TAR_BLOCK;
        if (size > len - pos) {
            rc = error_set(reterr, AL_CONFIG_ERROR,
                           "snapshot: the tar is truncated (a member of %llu bytes at byte %zu)",
                           (unsigned long long)size, pos - TAR_BLOCK);
            goto out;
        }
        const char *data = tar + pos;
        size_t next = pos + (size_t)size;
        next = next + (TAR_BLOCK - next % TAR_BLOCK) % TAR_BLOCK;
        if (next > len) {
            next = len; /* the last member's padding may be missing */
        }
        if (++members > ws->max_files + TAR_EXTRA_DIR + ws->max_files) {
            rc = error_set(reterr, AL_CONFIG_ERROR, "snapshot: the tar has more than %llu members",
                           2ULL * ws->max_files + TAR_EXTRA_DIR);
            goto out;
        }
        if (type == 'x' || type == 'g' || type == 'L') {
            if (size > TAR_PAX_MAX) {
                rc = error_set(reterr, AL_CONFIG_ERROR,
                               "snapshot: an extended tar header above %u bytes", TAR_PAX_MAX);
                goto out;
            }
            if (type == 'x' && pax_records(data, (size_t)size, pax_path, &pax_len, &has_pax_path,
                                           &pax_size, &has_pax_size) != 0) {
                rc = error_set(reterr, AL_CONFIG_ERROR,
                               "snapshot: a malformed (or link) pax header at byte %zu",
                               pos - TAR_BLOCK);
                goto out;
            }
            if (type == 'L') {
                size_t l = strnlen(data, (size_t)size);
                memcpy(pax_path, data, l);
                pax_path[l] = '\0';
                pax_len = l;
                has_pax_path = 1;
            }
            pos = next;
            continue;
        }
        size_t nlen;
        if (has_pax_path) {
            memcpy(name, pax_path, pax_len);
            nlen = pax_len;
        } else {
            size_t plen = memcmp(h + 257, "ustar", 5) == 0 ? strnlen(h + 345, 155) : 0;
            size_t blen = strnlen(h, 100);
            nlen = 0;
            if (plen) {
                memcpy(name, h + 345, plen);
                name[plen] = '/';
                nlen = plen + 1;
            }
            memcpy(name + nlen, h, blen);
            nlen += blen;
        }
        name[nlen] = '\0';
        has_pax_path = 0;
        has_pax_size = 0;
        size_t clen;
        int is_dir = type == '5';
        if (type != '0' && type != '\0' && type != '7' && !is_dir) {
            rc = error_set(reterr, AL_CONFIG_ERROR,
                           "snapshot: member '%.100s' is a %s, only files and directories are "
                           "accepted",
                           name,
                           type == '1'                  ? "hard link"
                           : type == '2'                ? "symbolic link"
                           : type == '3' || type == '4' ? "device"
                           : type == '6'                ? "FIFO"
                                                        : "member of an unknown type");
            goto out;
        }
        if (clean_name(name, nlen, clean, &clen) != 0) {
            rc = error_set(reterr, AL_CONFIG_ERROR,
                           "snapshot: member '%.100s' is not a relative path inside the root",
                           name);
            goto out;
        }
        if (collides_with_mount(ws, clean, clen, is_dir)) {
            rc = error_set(reterr, AL_CONFIG_ERROR,
                           "snapshot: member '%.100s' collides with a mount entry", clean);
            goto out;
        }
        if (!is_dir) {
            if (size > ws->max_file_bytes) {
                rc = error_set(reterr, AL_CONFIG_ERROR,
                               "snapshot: member '%.100s' has %llu bytes, above the file limit "
                               "of %llu",
                               clean, (unsigned long long)size,
                               (unsigned long long)ws->max_file_bytes);
                goto out;
            }
            if (++files > ws->max_files || (bytes += size) > ws->max_bytes) {
                rc = error_set(reterr, AL_CONFIG_ERROR,
                               "snapshot: the tar passes the workspace's limits (%llu files, "
                               "%llu bytes)",
                               (unsigned long long)ws->max_files,
                               (unsigned long long)ws->max_bytes);
                goto out;
            }
        }
        /* the member, and its parents as directories (duplicates go when sorted) */
        for (size_t i = 0; i < clen; i++) {
            if (clean[i] == '/' && stage(&s, clean, i, 1, NULL, 0) != 0) {
                rc = error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
                goto out;
            }
        }
        if (stage(&s, clean, clen, is_dir, data, is_dir ? 0 : (size_t)size) != 0) {
            rc = error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
            goto out;
        }
        s.v[s.n - 1]->entry = (int)(members & 0x3fffffff);
        pos = next;
    }
    for (size_t i = 0; i < s.n; i++) {
        if (s.v[i]->is_dir) {
            s.v[i]->entry = 0; /* parents and directories: order does not matter */
        }
    }
    if (s.n) {
        qsort(s.v, s.n, sizeof *s.v, staged_cmp);
    }
    /* duplicates: directories merge, a later file replaces an earlier one; a path that is a
     * file and a directory, or a file with something below it, is refused */
    size_t k = 0;
    for (size_t i = 0; i < s.n; i++) {
        /* each node is in exactly one slot at any time, so an error frees each once */
        struct ws_node *n = s.v[i];
        s.v[i] = NULL;
        n->entry = 0;
        if (k > 0) {
            struct ws_node *prev = s.v[k - 1];
            if (prev->path_len == n->path_len && memcmp(prev->path, n->path, n->path_len) == 0) {
                if (prev->is_dir != n->is_dir) {
                    s.v[i] = n;
                    rc = error_set(reterr, AL_CONFIG_ERROR,
                                   "snapshot: '%.100s' is both a file and a directory", n->path);
                    goto out;
                }
                ws_node_free(prev);
                s.v[k - 1] = n;
                continue;
            }
            if (!prev->is_dir && n->path_len > prev->path_len &&
                memcmp(n->path, prev->path, prev->path_len) == 0 &&
                n->path[prev->path_len] == '/') {
                s.v[i] = n;
                rc = error_set(reterr, AL_CONFIG_ERROR,
                               "snapshot: '%.100s' is a file with members below it", prev->path);
                goto out;
            }
        }
        s.v[k++] = n;
    }
    s.n = k;
    /* recount: a replaced file counted twice */
    files = 0;
    bytes = 0;
    for (size_t i = 0; i < s.n; i++) {
        if (!s.v[i]->is_dir) {
            files++;
            bytes += s.v[i]->len;
        }
    }
    /* swap in: the mounts' nodes stay, the staged ones merge with them (both sorted) */
    size_t total = ws->nnodes + s.n; /* at most: the own nodes go */
    struct ws_node **merged = malloc((total ? total : 1) * sizeof *merged);
    if (!merged) {
        rc = error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
        goto out;
    }
    ws_drop_own_nodes(ws);
    size_t a = 0;
    size_t b = 0;
    size_t m = 0;
    while (a < ws->nnodes || b < s.n) {
        int take_a;
        if (a == ws->nnodes) {
            take_a = 0;
        } else if (b == s.n) {
            take_a = 1;
        } else {
            take_a = staged_cmp(&ws->nodes[a], &s.v[b]) <= 0;
        }
        if (!take_a && a < ws->nnodes && ws->nodes[a]->path_len == s.v[b]->path_len &&
            memcmp(ws->nodes[a]->path, s.v[b]->path, s.v[b]->path_len) == 0) {
            ws_node_free(s.v[b++]); /* a directory the mounts' nodes have already */
            continue;
        }
        merged[m++] = take_a ? ws->nodes[a++] : s.v[b++];
    }
    free(ws->nodes);
    ws->nodes = merged;
    ws->nnodes = m;
    ws->cap_nodes = total ? total : 1;
    ws->files += files;
    ws->bytes += bytes;
    ws->dirs = 0;
    for (size_t i = 0; i < ws->nnodes; i++) {
        ws->dirs += ws->nodes[i]->is_dir != 0;
    }
    s.n = 0;
    if (ws_ensure_dirs(ws) != 0) {
        rc = error_set(reterr, AL_INTERNAL_ERROR, "out of memory");
    }
out:
    staged_free(&s);
    free(pax_path);
    free(name);
    free(clean);
    return rc;
}
