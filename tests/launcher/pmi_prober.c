/* SPDX-License-Identifier: BSD-3-Clause */
/* An outsider trying to take a rank's place on portico-run's PMI port (late_rank_prober.sh runs
 * it while a remote rank of a job has not started yet). It does what a user of the machine can:
 * it reads every process's command line (as `ps` does) for a job's PMI_PORT, PMI_JOBID, PMI_SIZE
 * and any PMI_ID, tries to read the environment and stdin of those processes through /proc, and
 * connects to the PMI port, asking for the job secret when a handshake is accepted.
 *   pmi_prober other-user   with every pmiid it could learn or guess (a PMI_ID on a command line,
 *                           the ranks' numbers): exits 0 when every attempt was refused and /proc
 *                           gave nothing away, 1 when a handshake was accepted (it prints the
 *                           secret it got) or /proc let it read the environment or stdin of a
 *                           process of the job
 *   pmi_prober guess        16 random tokens, then one more connection, which must fail (the
 *                           port is closed): 0 when so, 1 when a guess got in or the port stayed
 *                           open
 *   pmi_prober crowd        holds 200 silent connections to the PMI port (more than it keeps for
 *                           connections that have not identified themselves), says "holding" on
 *                           stdout and keeps them until its stdin ends; 0
 *   pmi_prober same-user    the job's own user: it reads the waiting (last) rank's token from its
 *                           remote shell's stdin (/proc/PID/fd/0) and takes the rank's place;
 *                           exits 3 when it got in (what the trust model says a process of the
 *                           same user can do), 0 when it could not
 * 2 when no job was found. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct Target {
    int pid;
    char port[64]; /* host:port */
    char kvsname[128];
    int size;
    int rank;        /* PMI_RANK of this command line */
    char pmi_id[32]; /* PMI_ID if the command line shows one */
};

/* The value of NAME=... inside a command line (NUL-separated words, and words of the remote
 * command string, which single-quotes them). */
static int find_value(const char *buf, size_t len, const char *name, char *out, size_t cap) {
    const size_t n = strlen(name);
    for (size_t i = 0; i + n + 1 < len; ++i) {
        if (memcmp(buf + i, name, n) != 0 || buf[i + n] != '=') continue;
        if (i > 0 && buf[i - 1] != '\'' && buf[i - 1] != ' ' && buf[i - 1] != '\0') continue;
        size_t j = i + n + 1, k = 0;
        while (j < len && buf[j] != '\'' && buf[j] != ' ' && buf[j] != '\0' && k + 1 < cap) out[k++] = buf[j++];
        out[k] = '\0';
        return k > 0;
    }
    return 0;
}

static int read_file(const char *path, char *buf, size_t cap, size_t *len) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return -errno;
    ssize_t got = read(fd, buf, cap);
    int e = errno;
    close(fd);
    if (got < 0) return -e;
    *len = (size_t)got;
    return 0;
}

/* Every process whose command line holds a PMI_PORT (a remote rank's shell, as ps shows it). */
static int scan(struct Target *t, int max) {
    int n = 0;
    DIR *d = opendir("/proc");
    if (!d) return 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        int pid = atoi(e->d_name);
        if (pid <= 0 || pid == getpid()) continue;
        char path[64], buf[16384], v[64];
        size_t len = 0;
        snprintf(path, sizeof path, "/proc/%d/cmdline", pid);
        if (read_file(path, buf, sizeof buf, &len) != 0) continue;
        if (!find_value(buf, len, "PMI_PORT", t[n].port, sizeof t[n].port)) continue;
        t[n].pid = pid;
        find_value(buf, len, "PMI_JOBID", t[n].kvsname, sizeof t[n].kvsname);
        t[n].size = find_value(buf, len, "PMI_SIZE", v, sizeof v) ? atoi(v) : 0;
        t[n].rank = find_value(buf, len, "PMI_RANK", v, sizeof v) ? atoi(v) : -1;
        if (!find_value(buf, len, "PMI_ID", t[n].pmi_id, sizeof t[n].pmi_id)) t[n].pmi_id[0] = '\0';
        ++n;
    }
    closedir(d);
    return n;
}

static int connect_to(const char *hostport) {
    char host[64];
    snprintf(host, sizeof host, "%s", hostport);
    char *colon = strrchr(host, ':');
    if (!colon) return -1;
    *colon = '\0';
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((unsigned short)atoi(colon + 1))};
    if (inet_pton(AF_INET, host, &a.sin_addr) != 1) return -1;
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0) return -1;
    if (connect(s, (struct sockaddr *)&a, sizeof a) != 0) {
        close(s);
        return -1;
    }
    return s;
}

static int read_line(int s, char *out, size_t cap) {
    size_t k = 0;
    for (;;) {
        char c;
        ssize_t n = read(s, &c, 1);
        if (n <= 0) break;
        if (c == '\n') break;
        if (k + 1 < cap) out[k++] = c;
    }
    out[k] = '\0';
    return (int)k;
}

/* One handshake with pmiid; 1 (and the secret printed) when accepted. */
static int try_pmiid(const struct Target *t, const char *pmiid) {
    int s = connect_to(t->port);
    if (s < 0) {
        printf("prober: pmiid %s: cannot connect to %s: %s\n", pmiid, t->port, strerror(errno));
        return 0;
    }
    char line[2048];
    snprintf(line, sizeof line, "cmd=initack pmiid=%s\n", pmiid);
    if (write(s, line, strlen(line)) < 0) {
        close(s);
        return 0;
    }
    read_line(s, line, sizeof line);
    if (strncmp(line, "cmd=initack", 11) != 0 || strstr(line, "rc=0") == NULL) {
        printf("prober: pmiid %s refused: '%s'\n", pmiid, line);
        close(s);
        return 0;
    }
    for (int i = 0; i < 3; ++i) read_line(s, line, sizeof line); /* size, rank, debug */
    const char init[] = "cmd=init pmi_version=1 pmi_subversion=1\n";
    if (write(s, init, sizeof init - 1) < 0) return 0;
    read_line(s, line, sizeof line);
    snprintf(line, sizeof line, "cmd=get kvsname=%s key=portico.secret\n", t->kvsname);
    if (write(s, line, strlen(line)) < 0) return 0;
    read_line(s, line, sizeof line);
    printf("prober: pmiid %s accepted; asked for the job secret: '%s'\n", pmiid, line);
    close(s);
    return 1;
}

/* Reads what /proc shows of a target: 1 when its environment was readable (another user's). */
static int read_proc(const struct Target *t) {
    int leaked = 0;
    char path[64], buf[16384], v[64];
    size_t len = 0;
    snprintf(path, sizeof path, "/proc/%d/environ", t->pid);
    int rc = read_file(path, buf, sizeof buf, &len);
    if (rc == 0) { /* another user's environment is not ours to read */
        printf("prober: %s is readable%s%s\n", path, find_value(buf, len, "PMI_ID", v, sizeof v) ? "; PMI_ID=" : "",
               find_value(buf, len, "PMI_ID", v, sizeof v) ? v : "");
        leaked = 1;
    } else {
        printf("prober: %s: %s\n", path, strerror(-rc));
    }
    if (t->pmi_id[0]) printf("prober: the command line of pid %d shows PMI_ID=%s\n", t->pid, t->pmi_id);
    return leaked;
}

/* The waiting rank's stdin, where its token waits: 1 when read (into out), else 0. */
static int read_stdin_of(const struct Target *t, char *out, size_t cap) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/0", t->pid);
    int fd = open(path, O_RDONLY | O_NONBLOCK);
    if (fd < 0) {
        printf("prober: %s: %s\n", path, strerror(errno));
        return 0;
    }
    /* The launcher writes the token right after starting the remote shell: wait for it. */
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 30000) != 1) printf("prober: %s: nothing came in 30 s\n", path);
    ssize_t k = read(fd, out, cap - 1);
    int e = errno;
    close(fd);
    if (k <= 0) {
        printf("prober: %s: %s\n", path, k == 0 ? "nothing to read" : strerror(e));
        return 0;
    }
    out[k] = '\0';
    out[strcspn(out, "\n")] = '\0';
    printf("prober: read a token from %s\n", path);
    return 1;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "other-user";
    setvbuf(stdout, NULL, _IONBF, 0);
    /* Wait (at most 30 s) for the job's last rank, whose program has not started: the test holds
     * it back (its remote shell waits) until this program is done. */
    struct Target t[64];
    int n = 0, late = -1;
    const time_t deadline = time(NULL) + 30;
    for (;;) {
        n = scan(t, 64);
        for (int i = 0; i < n && late < 0; ++i)
            if (t[i].size > 0 && t[i].rank == t[i].size - 1) late = i;
        if (late >= 0 || time(NULL) >= deadline) break;
        struct timespec ms = {0, 20 * 1000 * 1000};
        nanosleep(&ms, NULL);
    }
    if (late < 0) {
        printf("prober: no PMI job with a waiting last rank found\n");
        return 2;
    }
    const struct Target *target = &t[late];
    printf("prober: job %s, PMI port %s, %d ranks; %d remote shell command lines seen; rank %d waits (pid %d)\n",
           target->kvsname, target->port, target->size, n, target->rank, target->pid);
    if (strcmp(mode, "same-user") == 0) {
        char token[64];
        return read_stdin_of(target, token, sizeof token) && try_pmiid(target, token) ? 3 : 0;
    }
    if (strcmp(mode, "crowd") == 0) {
        int held = 0;
        for (int i = 0; i < 200; ++i) held += connect_to(target->port) >= 0; /* kept open until exit */
        printf("prober: holding %d silent connections\n", held);
        char c;
        while (read(STDIN_FILENO, &c, 1) > 0) {
        }
        return 0;
    }
    if (strcmp(mode, "guess") == 0) {
        int got_in = 0;
        for (int i = 0; i < 16 && !got_in; ++i) {
            unsigned int bits = 0;
            if (getrandom(&bits, sizeof bits, 0) != (ssize_t)sizeof bits) return 2;
            char id[16];
            snprintf(id, sizeof id, "%u", (bits & 0x7fffffffu) | 1u);
            got_in = try_pmiid(target, id);
        }
        if (got_in) return 1;
        int s = connect_to(target->port);
        if (s >= 0) {
            printf("prober: the PMI port still takes connections after 16 wrong tokens\n");
            close(s);
            return 1;
        }
        printf("prober: the PMI port is closed now: %s\n", strerror(errno));
        return 0;
    }
    /* Another user: what /proc shows, the numbers it sees (a PMI_ID on a command line, as before
     * tokens) and guesses (every rank number). */
    int got_in = 0;
    for (int i = 0; i < n; ++i) got_in |= read_proc(&t[i]);
    char token[64];
    if (read_stdin_of(target, token, sizeof token)) {
        try_pmiid(target, token);
        got_in = 1;
    }
    for (int i = 0; i < n && !got_in; ++i)
        if (t[i].pmi_id[0]) got_in = try_pmiid(&t[i], t[i].pmi_id);
    for (int r = 0; r < target->size && !got_in; ++r) {
        char id[16];
        snprintf(id, sizeof id, "%d", r);
        got_in = try_pmiid(target, id);
    }
    return got_in ? 1 : 0;
}
