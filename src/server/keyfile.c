/*
 * keyfile.c - key files of the data directory (keyfile.h). A new file is written to a temporary
 * name and linked into place, so two airlockd starting at once cannot both create a key: the
 * one that loses the link reads the winner's.
 */
#include "keyfile.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "hex.h"

static int keyfile_create(const char *path, size_t len, struct al_error *reterr)
{
    unsigned char raw[KEYFILE_MAX];
    char hex[2 * KEYFILE_MAX + 2];
    char tmp[4200];
    int rc = -1;
    if (RAND_bytes(raw, (int)len) != 1) {
        error_set(reterr, AL_INTERNAL_ERROR, "the random generator failed");
        return -1;
    }
    hex_encode(raw, len, hex);
    hex[2 * len] = '\n';
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid()) >= sizeof tmp) {
        error_set(reterr, AL_CONFIG_ERROR, "the data directory's path is too long");
        goto out;
    }
    unlink(tmp); /* a crash during an earlier creation may have left it */
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        error_set_errno(reterr, AL_INTERNAL_ERROR, errno, "cannot create %.150s", tmp);
        goto out;
    }
    int ok = write(fd, hex, 2 * len + 1) == (ssize_t)(2 * len + 1) && fsync(fd) == 0;
    close(fd);
    if (!ok) {
        error_set_errno(reterr, AL_INTERNAL_ERROR, errno, "cannot write %.150s", tmp);
        unlink(tmp);
        goto out;
    }
    if (link(tmp, path) != 0 && errno != EEXIST) {
        error_set_errno(reterr, AL_INTERNAL_ERROR, errno, "cannot create %.150s", path);
        unlink(tmp);
        goto out;
    }
    unlink(tmp);
    /* the new name durable before anything is signed or sealed with the key */
    char dir[4200];
    snprintf(dir, sizeof dir, "%s", path); /* keyfile_load's path: it fits */
    char *slash = strrchr(dir, '/');
    if (slash) {
        *slash = '\0';
    }
    int dfd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0 || fsync(dfd) != 0) {
        error_set_errno(reterr, AL_INTERNAL_ERROR, errno, "cannot sync the directory of %.150s",
                        path);
        if (dfd >= 0) {
            close(dfd);
        }
        goto out;
    }
    close(dfd);
    rc = 0;
out:
    OPENSSL_cleanse(raw, sizeof raw);
    OPENSSL_cleanse(hex, sizeof hex);
    return rc;
}

int keyfile_load(const char *data_dir, const char *file, const char *env, size_t len,
                 unsigned char *ret, struct al_error *reterr)
{
    char path[4200];
    char hex[2 * KEYFILE_MAX + 8] = "";
    const char *given = env ? getenv(env) : NULL;
    const char *what = env;
    int rc = -1;
    if (len == 0 || len > KEYFILE_MAX) {
        error_set(reterr, AL_CONFIG_ERROR, "bad key length");
        return -1;
    }
    if ((size_t)snprintf(path, sizeof path, "%s/%s", data_dir, file) >= sizeof path) {
        error_set(reterr, AL_CONFIG_ERROR, "the data directory's path is too long");
        return -1;
    }
    if (given && given[0]) {
        snprintf(hex, sizeof hex, "%s", given);
    } else {
        /* never through a symbolic link: the key is airlockd's own file */
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0 && errno == ENOENT) {
            if (keyfile_create(path, len, reterr) != 0) {
                return -1;
            }
            fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        }
        if (fd < 0) {
            error_set_errno(reterr, AL_INTERNAL_ERROR, errno, "cannot read %.150s", path);
            return -1;
        }
        ssize_t got = read(fd, hex, sizeof hex - 1);
        close(fd);
        hex[got > 0 ? got : 0] = '\0';
        what = path;
    }
    size_t hlen = strcspn(hex, "\r\n");
    if (hlen != 2 * len || hex_decode(hex, len, ret) != 0) {
        error_set(reterr, AL_CONFIG_ERROR, "%.150s must hold %zu hex digits", what, 2 * len);
        goto out;
    }
    rc = 0;
out:
    OPENSSL_cleanse(hex, sizeof hex);
    return rc;
}
