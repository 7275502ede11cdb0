/* procinfo.c - leak checks for the integration tests and the soak, read from /proc. */
#include "procinfo.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int procinfo_count_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    while (d && readdir(d)) {
        n++;
    }
    if (d) {
        closedir(d);
    }
    return n;
}

int procinfo_children(pid_t *out, int max)
{
    int n = 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        char path[300], buf[512];
        if (e->d_name[0] < '0' || e->d_name[0] > '9') {
            continue;
        }
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) {
            continue;
        }
        size_t len = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[len] = '\0';
        const char *close_paren = strrchr(buf, ')'); /* the command name may hold spaces */
        int ppid = 0;
        char state;
        if (close_paren && sscanf(close_paren + 2, "%c %d", &state, &ppid) == 2 &&
            ppid == getpid()) {
            if (out && n < max) {
                out[n] = (pid_t)strtol(e->d_name, NULL, 10);
            }
            n++;
        }
    }
    if (d) {
        closedir(d);
    }
    return n;
}

long procinfo_peak_rss_kib(pid_t pid)
{
    char path[64];
    if (pid == 0) {
        snprintf(path, sizeof path, "/proc/self/status");
    } else {
        snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    }
    FILE *f = fopen(path, "r");
    if (!f) {
        return -1;
    }
    char line[256];
    long kib = -1;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "VmHWM:", 6) == 0) {
            kib = strtol(line + 6, NULL, 10);
            break;
        }
    }
    fclose(f);
    return kib;
}

int procinfo_run_self(const char *arg, char *out, size_t cap)
{
    int fds[2];
    if (cap == 0 || pipe(fds) != 0) {
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        setenv("ASAN_OPTIONS", "quarantine_size_mb=0:thread_local_quarantine_size_kb=0", 1);
        execl("/proc/self/exe", "procinfo-child", arg, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    size_t got = 0;
    ssize_t n;
    while (got < cap - 1 && (n = read(fds[0], out + got, cap - 1 - got)) > 0) {
        got += (size_t)n;
    }
    out[got] = '\0';
    close(fds[0]);
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) {
        return -1;
    }
    return WEXITSTATUS(status);
}
