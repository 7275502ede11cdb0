/*
 * procstat.c - see procstat.h.
 */
#include "procstat.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROCS_MAX 4096

int proc_stat_read(const char *path, struct proc_stat *p)
{
    char buf[1024];
    FILE *f = fopen(path, "r");
    if (!f) {
        return -1;
    }
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* the name is between the first '(' and the last ')': it may hold both itself */
    char *open = strchr(buf, '(');
    char *s = strrchr(buf, ')');
    if (!open || !s || s < open) {
        return -1;
    }
    size_t clen = (size_t)(s - open - 1);
    if (clen >= sizeof p->comm) {
        clen = sizeof p->comm - 1;
    }
    memcpy(p->comm, open + 1, clen);
    p->comm[clen] = '\0';
    /* field 3 is the state; ppid is 4, utime 14, stime 15, cutime 16, cstime 17 */
    long long v[18] = { 0 };
    char *end = s + 1;
    for (int field = 3; field <= 17; field++) {
        while (*end == ' ') {
            end++;
        }
        if (field == 3) {
            end++;
            continue;
        }
        v[field] = strtoll(end, &end, 10);
    }
    p->ppid = (pid_t)v[4];
    p->ticks = v[14] + v[15];
    p->child_ticks = v[16] + v[17];
    return 0;
}

long long proc_tree_ticks(pid_t root)
{
    static struct {
        pid_t pid;
        struct proc_stat st;
    } procs[PROCS_MAX];
    static char in[PROCS_MAX];
    int n = 0;
    DIR *d = opendir("/proc");
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL && n < PROCS_MAX) {
        char path[300];
        if (!isdigit((unsigned char)de->d_name[0])) {
            continue;
        }
        snprintf(path, sizeof path, "/proc/%s/stat", de->d_name);
        if (proc_stat_read(path, &procs[n].st) == 0) {
            procs[n].pid = (pid_t)strtol(de->d_name, NULL, 10);
            n++;
        }
    }
    if (d) {
        closedir(d);
    }
    long long sum = 0;
    int grew = 1;
    memset(in, 0, (size_t)n);
    for (int i = 0; i < n; i++) {
        if (procs[i].pid == root) {
            in[i] = 1;
            sum += procs[i].st.ticks + procs[i].st.child_ticks;
        }
    }
    while (grew) {
        grew = 0;
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < n && !in[i]; j++) {
                if (in[j] && procs[i].st.ppid == procs[j].pid) {
                    in[i] = 1;
                    sum += procs[i].st.ticks + procs[i].st.child_ticks;
                    grew = 1;
                }
            }
        }
    }
    return sum;
}
