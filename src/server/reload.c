/*
 * reload.c - SIGHUP's list of things to re-read. Each function swaps what it re-read itself
 * (under its own lock) or keeps the old one; this file only calls them in order and logs, once,
 * what each said, so an operator reads one line per thing after every SIGHUP.
 */
#include "reload.h"

#include <stdio.h>

int reload_add(struct reload_list *r, const char *what, reload_fn *fn, void *arg)
{
    if (r->n == RELOAD_MAX) {
        return -1;
    }
    r->item[r->n].what = what;
    r->item[r->n].fn = fn;
    r->item[r->n].arg = arg;
    r->n++;
    return 0;
}

void reload_all(const struct reload_list *r)
{
    char said[RELOAD_SAID_MAX];
    if (r->n == 0) {
        fprintf(stderr, "airlockd: SIGHUP: nothing to re-read\n");
    }
    for (size_t i = 0; i < r->n; i++) {
        said[0] = '\0';
        if (r->item[i].fn(r->item[i].arg, said) == 0) {
            fprintf(stderr, "airlockd: SIGHUP: %s re-read: %s\n", r->item[i].what, said);
        } else {
            fprintf(stderr, "airlockd: SIGHUP: %s not re-read, the one in use stays: %s\n",
                    r->item[i].what, said);
        }
    }
    fflush(stderr);
}
