/* unit.mounts - a mount looked up for a run's workspace (src/server/mounts.c): an S3 mount's
 * secret opens with airlockd's key and with no other, nor under another mount's name; a local
 * mount's path is resolved again at lookup, so one whose root left the config, or whose
 * directory became a link that leads out, is refused; an unknown name is NOT_FOUND. Also the
 * roots themselves: an absolute directory each, kept resolved. */
/* cmocka.h needs these first */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
/* clang-format on */

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mounts.h"
#include "secretbox.h"
#include "store.h"

static const unsigned char key_a[SECRETBOX_KEY_LEN] = { 7, 1, 2 };
static const unsigned char key_b[SECRETBOX_KEY_LEN] = { 7, 1, 3 };
static struct secretbox_keys keys_a = { .lock = PTHREAD_MUTEX_INITIALIZER };
static struct secretbox_keys keys_b = { .lock = PTHREAD_MUTEX_INITIALIZER };
static const char secret[] = "canary-secret-access-key-0123";

struct fixture {
    char dir[64];
    char root[PATH_MAX];
    char outside[PATH_MAX];
    struct store *s;
    struct mounts_roots roots;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    char errmsg[STORE_ERRMSG_MAX];
    char db[PATH_MAX + 16];
    char why[MOUNTS_WHY_MAX];
    assert_non_null(f);
    snprintf(f->dir, sizeof f->dir, "/tmp/unit-mounts-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->root, sizeof f->root, "%s/root", f->dir);
    snprintf(f->outside, sizeof f->outside, "%s/outside", f->dir);
    assert_int_equal(mkdir(f->root, 0700), 0);
    assert_int_equal(mkdir(f->outside, 0700), 0);
    snprintf(db, sizeof db, "%s/airlock.db", f->dir);
    assert_int_equal(store_sqlite_open(db, &f->s, errmsg), STORE_OK);
    assert_int_equal(f->s->ops->department_create(f->s, "finance"), STORE_OK);
    assert_int_equal(mounts_roots_add(&f->roots, f->root, why), 0);
    *state = f;
    return 0;
}

/* rm -r, never following a link */
static void remove_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0) {
        return;
    }
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        struct dirent *e;
        char sub[PATH_MAX + 256];
        while (d && (e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
                snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
                remove_tree(sub);
            }
        }
        if (d) {
            closedir(d);
        }
        rmdir(path);
    } else {
        unlink(path);
    }
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    f->s->ops->close(f->s);
    remove_tree(f->dir);
    free(f);
    return 0;
}

static void put_s3(struct fixture *f, const char *name, const char *sealed_for)
{
    char context[128];
    char *sealed = NULL;
    snprintf(context, sizeof context, "mount/%s/secret_access_key", sealed_for);
    assert_int_equal(secretbox_seal(key_a, context, secret, strlen(secret), &sealed), 0);
    struct store_mount m = { .name = name,
                             .department = "finance",
                             .kind = "s3",
                             .endpoint = "http://127.0.0.1:9/",
                             .bucket = "lake",
                             .region = "us-east-1",
                             .access_key_id = "AKID",
                             .secret_sealed = sealed,
                             .created_by = "admin" };
    assert_int_equal(f->s->ops->mount_create(f->s, &m), STORE_OK);
    free(sealed);
}

static void put_local(struct fixture *f, const char *name, const char *path)
{
    struct store_mount m = {
        .name = name, .department = "finance", .kind = "local", .path = path, .created_by = "admin"
    };
    assert_int_equal(f->s->ops->mount_create(f->s, &m), STORE_OK);
}

static void test_mounts_s3_secret_opens_with_its_key_and_name(void **state)
{
    struct fixture *f = *state;
    struct mounts_mount m;
    char why[MOUNTS_WHY_MAX] = "";
    put_s3(f, "lake", "lake");
    assert_int_equal(
            mounts_lookup(f->s, secretbox_keys_one(&keys_a, key_a), &f->roots, "lake", &m, why),
            STORE_OK);
    assert_int_equal(m.s3, 1);
    assert_string_equal(m.department, "finance");
    assert_string_equal(m.endpoint, "http://127.0.0.1:9/");
    assert_string_equal(m.bucket, "lake");
    assert_string_equal(m.region, "us-east-1");
    assert_string_equal(m.access_key_id, "AKID");
    assert_int_equal(m.secret_access_key_len, strlen(secret));
    assert_memory_equal(m.secret_access_key, secret, strlen(secret));
    assert_null(m.path);
    mounts_mount_done(&m);
    assert_null(m.secret_access_key);
    /* another key, or a sealed value copied from another mount's row: refused, never shown */
    assert_int_equal(
            mounts_lookup(f->s, secretbox_keys_one(&keys_b, key_b), &f->roots, "lake", &m, why),
            STORE_ERROR);
    assert_null(strstr(why, secret));
    assert_non_null(strstr(why, "lake"));
    mounts_mount_done(&m);
    put_s3(f, "copied", "lake");
    assert_int_equal(
            mounts_lookup(f->s, secretbox_keys_one(&keys_a, key_a), &f->roots, "copied", &m, why),
            STORE_ERROR);
    mounts_mount_done(&m);
    assert_int_equal(
            mounts_lookup(f->s, secretbox_keys_one(&keys_a, key_a), &f->roots, "nowhere", &m, why),
            STORE_NOT_FOUND);
    mounts_mount_done(&m);
}

static void test_mounts_local_path_checked_again(void **state)
{
    struct fixture *f = *state;
    struct mounts_mount m;
    struct mounts_roots none;
    char dir[PATH_MAX + 16];
    char resolved[PATH_MAX];
    char why[MOUNTS_WHY_MAX] = "";
    snprintf(dir, sizeof dir, "%s/handbook", f->root);
    assert_int_equal(mkdir(dir, 0700), 0);
    assert_int_equal(mounts_local_resolve(&f->roots, dir, resolved, why), 0);
    put_local(f, "handbook", resolved);
    assert_int_equal(
            mounts_lookup(f->s, secretbox_keys_one(&keys_a, key_a), &f->roots, "handbook", &m, why),
            STORE_OK);
    assert_int_equal(m.s3, 0);
    assert_string_equal(m.path, resolved);
    assert_null(m.secret_access_key);
    mounts_mount_done(&m);
    /* the root left the config */
    memset(&none, 0, sizeof none);
    assert_int_equal(
            mounts_lookup(f->s, secretbox_keys_one(&keys_a, key_a), &none, "handbook", &m, why),
            STORE_ERROR);
    assert_non_null(strstr(why, "handbook"));
    mounts_mount_done(&m);
    assert_int_equal(
            mounts_lookup(f->s, secretbox_keys_one(&keys_a, key_a), NULL, "handbook", &m, why),
            STORE_ERROR);
    mounts_mount_done(&m);
    /* the directory became a link that leads out of the root */
    assert_int_equal(rmdir(dir), 0);
    assert_int_equal(symlink(f->outside, dir), 0);
    assert_int_equal(
            mounts_lookup(f->s, secretbox_keys_one(&keys_a, key_a), &f->roots, "handbook", &m, why),
            STORE_ERROR);
    mounts_mount_done(&m);
    /* ... or one that stays under it, but is no longer the directory registered */
    char other[PATH_MAX + 16];
    snprintf(other, sizeof other, "%s/other", f->root);
    assert_int_equal(mkdir(other, 0700), 0);
    assert_int_equal(unlink(dir), 0);
    assert_int_equal(symlink(other, dir), 0);
    assert_int_equal(
            mounts_lookup(f->s, secretbox_keys_one(&keys_a, key_a), &f->roots, "handbook", &m, why),
            STORE_ERROR);
    assert_non_null(strstr(why, "elsewhere"));
    mounts_mount_done(&m);
}

static void test_mounts_roots(void **state)
{
    struct fixture *f = *state;
    struct mounts_roots r;
    char link[PATH_MAX + 16];
    char why[MOUNTS_WHY_MAX];
    char resolved[PATH_MAX];
    memset(&r, 0, sizeof r);
    assert_int_equal(mounts_roots_add(&r, "relative", why), -1);
    assert_int_equal(mounts_roots_add(&r, "/nonexistent-root-dir", why), -1);
    assert_int_equal(r.n, 0);
    /* a root that is a link is kept where it leads: a path through either spelling is under it */
    snprintf(link, sizeof link, "%s/root-link", f->dir);
    assert_int_equal(symlink(f->root, link), 0);
    assert_int_equal(mounts_roots_add(&r, link, why), 0);
    assert_string_equal(r.dirs[0], f->roots.dirs[0]);
    assert_int_equal(mounts_local_resolve(&r, f->root, resolved, why), 0);
    assert_int_equal(mounts_local_resolve(&r, link, resolved, why), 0);
    assert_string_equal(resolved, f->roots.dirs[0]);
    /* a sibling whose name starts as the root's is not under it */
    char sibling[PATH_MAX + 16];
    snprintf(sibling, sizeof sibling, "%s/root2", f->dir);
    assert_int_equal(mkdir(sibling, 0700), 0);
    assert_int_equal(mounts_local_resolve(&r, sibling, resolved, why), -1);
    for (int i = 1; i < MOUNTS_ROOTS_MAX; i++) {
        assert_int_equal(mounts_roots_add(&r, f->root, why), 0);
    }
    assert_int_equal(mounts_roots_add(&r, f->root, why), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_mounts_s3_secret_opens_with_its_key_and_name, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_mounts_local_path_checked_again, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mounts_roots, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
