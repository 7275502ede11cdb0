/*
 * sysname.h - the name of a system call by its number on this architecture, to say which call
 * the worker's jail stopped. The table (sysname.c in the build folder) is generated at build
 * time from <sys/syscall.h> by cmake/sysname.cmake, so the host library needs no libseccomp.
 */
#ifndef AIRLOCK_LIB_SYSNAME_H
#define AIRLOCK_LIB_SYSNAME_H

/* "openat" for __NR_openat; NULL for a number this architecture does not define. The string is
 * static. */
const char *sysname_of(long nr);

#endif
