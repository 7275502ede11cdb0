/*
 * migrations.h - the numbered schema migrations, embedded at build time by gen_migrations.cmake:
 * migrations[] from src/store/migrations/NNNN_name.sql (SQLite) and postgres_migrations[] from
 * src/store/migrations/postgres/NNNN_name.sql (the same steps in PostgreSQL's dialect, file for
 * file: same count, same names, checked by unit.store). migrations[i].number is i + 1; the schema
 * version of a database is the number of the last migration applied (PRAGMA user_version in
 * SQLite, the airlock_schema table in PostgreSQL).
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
extern const struct migration postgres_migrations[];
extern const int postgres_migrations_count;

#endif
