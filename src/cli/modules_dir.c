/*
 * modules_dir.c - `airlock run --modules DIR`: a read-only module root as the run's module
 * loader (al_config_set_module_loader).
 *
 * Names the guest sees are canonical paths inside the root, "/lib/util.js"; host paths never
 * appear in a name or an error. A specifier resolves against its referrer's directory (the
 * entry's is the root); "/x.js" is relative to the root; "." and ".." segments are collapsed,
 * and one that would leave the root is refused, as is a name whose real path (symlinks
 * followed) is outside the root. The canonical name is the real path, so a file reached through
 * a symlinked directory is still one module.
 *
 * load trusts nothing resolve said: the worker may be compromised and ask for any name. It
 * opens the file with openat2(RESOLVE_BENEATH) on the root, which refuses any path - symlinks
 * included, at the moment of opening - that leaves it, and reads regular files only (a FIFO
 * would block the run loop).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "buf.h"
#include "cli.h"
#include "json.h"

struct modules_dir {
    char *root;  /* real path, no trailing slash */
    int root_fd; /* O_PATH descriptor of the root */
    size_t source_limit;
};

struct modules_dir *modules_dir_new(const char *dir, size_t source_limit)
{
    char real[PATH_MAX];
    struct stat st;
    if (!realpath(dir, real) || stat(real, &st) != 0 || !S_ISDIR(st.st_mode)) {
        cli_error("--modules %s: not a directory", dir);
        return NULL;
    }
    struct modules_dir *m = calloc(1, sizeof *m);
    if (!m || !(m->root = strdup(real))) {
        free(m);
        cli_error("out of memory");
        return NULL;
    }
    m->root_fd = open(real, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (m->root_fd < 0) {
        int err = errno;
        free(m->root);
        free(m);
        cli_error("--modules %s: %s", dir, strerror(err));
        return NULL;
    }
    m->source_limit = source_limit;
    return m;
}

const char *modules_dir_root(const struct modules_dir *m)
{
    return m->root;
}

void modules_dir_free(struct modules_dir *m)
{
    if (m) {
        close(m->root_fd);
        free(m->root);
        free(m);
    }
}

/* The call's string arguments: 1 when args is an array of `n` strings. */
static int string_args(struct al_call *call, struct json_doc **ret_doc, const char **out, int n)
{
    size_t len;
    const char *args = al_call_args(call, &len);
    if (json_parse(args, len, 4, ret_doc, NULL) != AL_OK) {
        return 0;
    }
    const struct json_node *a = json_root(*ret_doc);
    if (a->type != JSON_ARRAY || a->count < (size_t)n) {
        return 0;
    }
    const struct json_node *e = a->child;
    for (int i = 0; i < n; i++, e = e->next) {
        if (e->type != JSON_STRING || strlen(e->str) != e->str_len) {
            return 0;
        }
        out[i] = e->str;
    }
    return 1;
}

static void throw_fmt(struct al_call *call, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));

static void throw_fmt(struct al_call *call, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    al_call_throw(call, msg);
}

/* Collapses "." and ".." of `base`'s directory + `spec` into out ("/a/b.js"). -1 when the name
 * would leave the root or is too long. */
static int canonical(const char *base, const char *spec, char *out, size_t cap)
{
    char path[PATH_MAX];
    if (spec[0] == '/') {
        if (snprintf(path, sizeof path, "%s", spec) >= (int)sizeof path) {
            return -1;
        }
    } else {
        const char *slash = base[0] == '/' ? strrchr(base, '/') : NULL;
        int dir_len = slash ? (int)(slash - base) : 0;
        if (snprintf(path, sizeof path, "%.*s/%s", dir_len, base, spec) >= (int)sizeof path) {
            return -1;
        }
    }
    size_t o = 0;
    const char *p = path;
    while (*p) {
        while (*p == '/') {
            p++;
        }
        const char *seg = p;
        while (*p && *p != '/') {
            p++;
        }
        size_t n = (size_t)(p - seg);
        if (n == 0 || (n == 1 && seg[0] == '.')) {
            continue;
        }
        if (n == 2 && seg[0] == '.' && seg[1] == '.') {
            if (o == 0) {
                return -1; /* above the root */
            }
            while (o > 0 && out[o - 1] != '/') {
                o--;
            }
            o--; /* the slash */
            continue;
        }
        if (o + 1 + n + 1 > cap) {
            return -1;
        }
        out[o++] = '/';
        memcpy(out + o, seg, n);
        o += n;
    }
    out[o] = '\0';
    return o > 0 ? 0 : -1;
}

void modules_dir_resolve(struct al_call *call, void *userdata)
{
    struct modules_dir *m = userdata;
    struct json_doc *doc = NULL;
    const char *a[2];
    if (!string_args(call, &doc, a, 2)) {
        json_doc_free(doc);
        al_call_throw(call, "invalid module specifier");
        return;
    }
    char name[PATH_MAX];
    if (canonical(a[1], a[0], name, sizeof name) != 0) {
        throw_fmt(call, "cannot import '%.200s' from '%.200s': it leaves the module root", a[0],
                  a[1]);
        json_doc_free(doc);
        return;
    }
    char full[PATH_MAX * 2];
    char real[PATH_MAX];
    snprintf(full, sizeof full, "%s%s", m->root, name);
    size_t rlen = strlen(m->root);
    if (!realpath(full, real)) {
        throw_fmt(call, "cannot import '%.200s': module '%.200s' not found", a[0], name);
    } else if (strncmp(real, m->root, rlen) != 0 || real[rlen] != '/') {
        throw_fmt(call, "cannot import '%.200s': module '%.200s' leaves the module root", a[0],
                  name);
    } else {
        /* the real path inside the root: one name per file */
        const char *canon = real + rlen;
        struct buf b;
        buf_init(&b, SIZE_MAX / 2);
        if (json_write_string(&b, canon, strlen(canon)) == BUF_OK) {
            al_call_return(call, b.data, b.len);
        } else {
            al_call_throw(call, "out of memory");
        }
        buf_done(&b);
    }
    json_doc_free(doc);
}

void modules_dir_load(struct al_call *call, void *userdata)
{
    struct modules_dir *m = userdata;
    struct json_doc *doc = NULL;
    const char *a[1];
    char name[PATH_MAX];
    if (!string_args(call, &doc, a, 1) || canonical("/", a[0], name, sizeof name) != 0) {
        json_doc_free(doc);
        al_call_throw(call, "invalid module name");
        return;
    }
    json_doc_free(doc);
    struct open_how how;
    memset(&how, 0, sizeof how);
    how.flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    int fd = (int)syscall(SYS_openat2, m->root_fd, name + 1, &how, sizeof how);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        if (fd >= 0) {
            close(fd);
        }
        throw_fmt(call, "module '%.200s' cannot be read", name);
        return;
    }
    /* One byte past the limit is enough for the worker to refuse it. */
    size_t want = m->source_limit + 1;
    char *src = malloc(want);
    size_t got = 0;
    while (src && got < want) {
        ssize_t n = read(fd, src + got, want - got);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        got += (size_t)n;
    }
    close(fd);
    struct buf b;
    buf_init(&b, SIZE_MAX / 2);
    if (src && json_write_string(&b, src, got) == BUF_OK) {
        al_call_return(call, b.data, b.len);
    } else {
        al_call_throw(call, "out of memory");
    }
    buf_done(&b);
    free(src);
}
