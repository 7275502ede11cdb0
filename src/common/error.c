/* error.c - detail messages for enum al_code failures; bounded to struct al_error's buffer. */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

enum al_code error_set(struct al_error *err, enum al_code code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err->code = code;
        err->sys_errno = 0;
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return code;
}

enum al_code error_set_errno(struct al_error *err, enum al_code code, int errnum, const char *fmt,
                             ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err->code = code;
        err->sys_errno = errnum;
        int n = vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
        if (n >= 0 && (size_t)n < sizeof err->message) {
            snprintf(err->message + n, sizeof err->message - (size_t)n, ": %s", strerror(errnum));
        }
    }
    return code;
}
