/* SPDX-License-Identifier: BSD-3-Clause */
/* The point where a rank of a memory benchmark program holds its steady-state resources (its
 * links, buffers and queues after it has talked to every peer).
 *
 * Under bench/memory/memory_per_rank.py (MEMBENCH_READY names a file) the rank appends its OS pid
 * to that file and stops itself (SIGSTOP): the script reads every rank's /proc/<pid>/smaps_rollup
 * while all of them hold their resources and none can change them, then lets them go on
 * (SIGCONT). Run alone, the rank prints its own figures to stderr instead. */
#ifndef MEMORY_CHECKPOINT_H
#define MEMORY_CHECKPOINT_H

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Rank 0 says how long each phase took (stderr): where a large job's time goes. */
static inline void memory_phase(const char *program, int rank, const char *name) {
    static double last = 0;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    const double now = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    if (rank == 0 && last != 0) fprintf(stderr, "%s: %s took %.2f s\n", program, name, now - last);
    last = now;
}

static inline void memory_checkpoint(void) {
    const char *ready = getenv("MEMBENCH_READY");
    if (!ready || !*ready) {
        FILE *f = fopen("/proc/self/smaps_rollup", "r");
        char line[256];
        while (f && fgets(line, sizeof line, f))
            if (!strncmp(line, "Rss:", 4) || !strncmp(line, "Pss:", 4))
                fprintf(stderr, "[%ld] %s", (long)getpid(), line);
        if (f) fclose(f);
        return;
    }
    char line[32];
    const int n = snprintf(line, sizeof line, "%ld\n", (long)getpid());
    const int fd = open(ready, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0 || write(fd, line, (size_t)n) != n) {
        perror(ready);
        exit(2);
    }
    close(fd);
    raise(SIGSTOP);
}

#endif
