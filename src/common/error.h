/* error.h - filling a caller's optional struct al_error. */
#ifndef AIRLOCK_ERROR_H
#define AIRLOCK_ERROR_H

#include "airlock.h"

/* Sets *err (if not NULL) and returns `code`, so failures read `return error_set(err, ...)`. */
enum al_code error_set(struct al_error *err, enum al_code code, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
/* Same, with errno recorded and its text appended to the message. */
enum al_code error_set_errno(struct al_error *err, enum al_code code, int errnum, const char *fmt,
                             ...) __attribute__((format(printf, 4, 5)));

#endif
