/*
 * openapi.h - the OpenAPI 3.1 document of airlockd's routes (src/server/openapi.json, written by
 * hand), embedded at build time by gen_embed.cmake. Served by GET /v1/openapi.json; the
 * integration test checks it against the route table both ways.
 */
#ifndef AIRLOCK_SERVER_OPENAPI_H
#define AIRLOCK_SERVER_OPENAPI_H

#include <stddef.h>

extern const char openapi_json[];      /* the file's bytes, NUL-terminated */
extern const size_t openapi_json_len;  /* without the NUL */
extern const char openapi_json_etag[]; /* "\"<32 hex of its SHA-256>\"", quotes included */

#endif
