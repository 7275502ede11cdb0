/*
 * s3.h - airlockd's client for S3-compatible object storage, and the mount backend over it.
 *
 * A mount is one bucket at one endpoint, addressed path-style (ENDPOINT/BUCKET/KEY, so any
 * S3-compatible server works without DNS per bucket), every request signed with AWS Signature
 * Version 4 for service "s3" in the mount's region and carrying `x-amz-content-sha256`, the
 * SHA-256 hex of its body (also of an empty one), which the signature covers. Only http and
 * https; no redirects followed, no proxy from the environment, no cookies, no content decoding.
 * A connection is opened within S3_CONNECT_TIMEOUT_MS and a whole operation (every page of a
 * listing included) ends within the mount's timeout_ms, so a server that stalls gives an error,
 * never a hang. Answers are capped while they arrive.
 *
 * Errors: every function returns AL_MOUNT_OK, AL_MOUNT_NOT_FOUND (no such key) or
 * AL_MOUNT_ERROR with a message in err (errlen bytes, NUL-terminated) naming the bucket, the
 * operation, the key and how it failed - HTTP status and S3's error code, "timed out after N
 * ms", "connection refused", "the answer is not ...". A message never holds the secret access
 * key, the access key id, a signature or the endpoint (which names where the secret goes, not
 * what it is: kept out so an operator sees one form everywhere). A missing bucket is an error,
 * never AL_MOUNT_NOT_FOUND.
 *
 * Thread-safety: a mount may be used from any number of threads at once; it keeps one idle
 * connection handle for reuse.
 */
#ifndef AIRLOCK_SERVER_S3_H
#define AIRLOCK_SERVER_S3_H

#include <stddef.h>
#include <stdint.h>

#include "airlock.h"

#include "mount_ops.h"

#define S3_CONNECT_TIMEOUT_MS 5000               /* to open a connection */
#define S3_TIMEOUT_MS         60000              /* a whole operation, by default */
#define S3_READ_MAX           ((size_t)1 << 30)  /* bytes one s3_get returns at most */
#define S3_LIST_PAGE_MAX      ((size_t)16 << 20) /* bytes of one ListObjectsV2 answer */
#define S3_LIST_PAGES_MAX     100000u            /* pages of one listing (1000 keys each) */
#define S3_KEY_MAX            1024               /* bytes of a key, as S3 allows */

struct s3_mount_config {
    const char *endpoint; /* "https://s3.eu-west-1.amazonaws.com", "http://127.0.0.1:9000";
                             http or https, no user info, query or fragment; a path is kept */
    const char *bucket;   /* 3-63 of a-z 0-9 . - (S3's bucket names) */
    const char *region;   /* "us-east-1": 1-32 of a-z 0-9 - */
    const char *access_key_id;     /* 1-128 printable ASCII, no space */
    const char *secret_access_key; /* 1-256 bytes, no NUL */
    int64_t timeout_ms;            /* a whole operation; 0: S3_TIMEOUT_MS */
};

struct s3_mount;

/* Makes a mount from c (every string copied; the secret cleansed on free). No request is made.
 * AL_OK with *ret; AL_CONFIG_ERROR naming the member that is malformed (never its value, for
 * the two credentials); AL_INTERNAL_ERROR when out of memory or curl does not start. */
AL_NODISCARD enum al_code s3_mount_new(const struct s3_mount_config *c, struct s3_mount **ret,
                                       struct al_error *reterr);
/* NULL-safe. */
void s3_mount_free(struct s3_mount *m);

/* HEAD: the object's size. */
enum al_mount_status s3_head(struct s3_mount *m, const char *key, uint64_t *ret_size, char *err,
                             size_t errlen);
/* GET with Range: up to len bytes from offset (len UINT64_MAX: to the end), at most S3_READ_MAX
 * (an error past it). *ret is malloc'd (NUL-terminated, not counted in *ret_len; free() it).
 * Reading at or past the end gives 0 bytes; len 0 asks only whether the key exists (a HEAD). */
enum al_mount_status s3_get(struct s3_mount *m, const char *key, uint64_t offset, uint64_t len,
                            char **ret, size_t *ret_len, char *err, size_t errlen);
/* PUT of len bytes (Content-Type application/octet-stream); replaces an object. */
enum al_mount_status s3_put(struct s3_mount *m, const char *key, const char *data, size_t len,
                            char *err, size_t errlen);
/* DELETE; deleting a missing key is AL_MOUNT_OK, as S3 answers. */
enum al_mount_status s3_delete(struct s3_mount *m, const char *key, char *err, size_t errlen);

/* One item of a listing: an object (key, size) or, with is_prefix, a common prefix ("dir/",
 * ending in the delimiter). key is entity-decoded, valid UTF-8, no NUL, at most S3_KEY_MAX
 * bytes; valid during the call. */
struct s3_list_item {
    const char *key;
    size_t key_len;
    uint64_t size;
    int is_prefix;
};
/* Return 0 to go on, non-zero to stop the listing (which then returns AL_MOUNT_OK). */
typedef int s3_list_fn(const struct s3_list_item *item, void *ud);

/* ListObjectsV2 of the keys under prefix ("" for all), delimiter "/", page after page by
 * continuation token until the last one (at most S3_LIST_PAGES_MAX pages), in S3's order. */
enum al_mount_status s3_list(struct s3_mount *m, const char *prefix, s3_list_fn *each, void *ud,
                             char *err, size_t errlen);

/* One ListObjectsV2 answer parsed (exposed for the tests and the fuzz target): each item
 * handed to each; *ret_token the NextContinuationToken when IsTruncated is true (malloc'd) or
 * NULL at the last page. 0, or -1 with what is wrong in err: not well-formed (within the bounds
 * this parser keeps: depth 16, a text of 4096 bytes, no DOCTYPE), not a ListBucketResult, a key
 * that is not valid UTF-8 or holds a NUL, a size that is not a number, truncated without a
 * token. Never reads past len. */
int s3_list_parse(const char *xml, size_t len, s3_list_fn *each, void *ud, char **ret_token,
                  char *err, size_t errlen);

/* The mount backend over an s3_mount (ud: struct s3_mount *). A key "" or ending in "/" is a
 * directory (the entry's prefix); stat of another key is the object's size, else a directory
 * when keys lie below "key/", else AL_MOUNT_NOT_FOUND. list names the direct children: objects
 * and common prefixes below "key/" (or below key when it is "" or ends in "/"), skipping the
 * names that are no single path segment ("", ".", "..") and a directory marker object ("dir/"
 * itself); a directory with nothing below is AL_MOUNT_NOT_FOUND unless its key is "" or ends in
 * "/". */
extern const struct al_mount_ops s3_mount_ops;

#endif
