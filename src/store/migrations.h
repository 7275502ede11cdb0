/*
 * migrations.h - the numbered schema migrations (src/store/migrations/NNNN_name.sql), embedded
 * at build time by gen_migrations.cmake. migrations[i].number is i + 1; the schema version of a
 * database is the number of the last migration applied (PRAGMA user_version).
 */
#ifndef AIRLOCK_STORE_MIGRATIONS_H
#define AIRLOCK_STORE_MIGRATIONS_H

struct migration {
    int number;
    const char *name; /* file name, e.g. "0001_init.sql" */
    const char *sql;  /* NUL-terminated */
};

extern const struct migration migrations[];
extern const int migrations_count;

#endif
