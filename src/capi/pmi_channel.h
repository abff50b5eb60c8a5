/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmi_channel.h — libportals' private entry point for Portico's libpmi (src/pmi): the PMI-1 API
 * on the process's one launcher connection, the one the job service (bootstrap/job.hpp) uses.
 *
 * Why an entry point in libportals and not a client of its own in libpmi: a launcher accepts one
 * connection per rank, and under PMI_FD there is only the one socket, so the application's PMI
 * calls and Portico's own (the logical NI's rank map, the runtime collectives) must take turns on
 * one channel, request by request, under one lock, and the launcher's finalize must wait for the
 * last of them. That channel lives in libportals (bootstrap::PmiClient's registry); libpmi reaches
 * it through this one function.
 *
 * Not public API: not installed, exported from libportals.so.4 under its own version node
 * (PORTICO_PMI_PRIVATE_1, libportals.map) so that a libpmi and a libportals of different
 * Portico builds refuse to load together instead of misreading this table. A change to the table
 * bumps the node and PORTICO_PMI_CHANNEL_VERSION.
 *
 * Conventions: every function returns a PMI-1 code (pmi.h: PMI_SUCCESS 0, PMI_FAIL -1,
 * PMI_ERR_*) and, on failure, writes the reason as a NUL-terminated string into why[0..why_len).
 */
#ifndef PORTICO_PMI_CHANNEL_H
#define PORTICO_PMI_CHANNEL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PORTICO_PMI_CHANNEL_VERSION 1

/* What PMI_Init learns. Lengths are C buffer sizes (terminating NUL included), as PMI-1's
 * PMI_KVS_Get_*_length_max report them. */
struct portico_pmi_identity {
    int rank;
    int size;
    int spawned;       /* PMI_SPAWNED: started by another job's PMI_Spawn_multiple (never by Portico) */
    int launched;      /* 0: no launcher started the process (a job of one, KVS in this process) */
    int kvsname_max;   /* buffer size for the KVS name */
    int keylen_max;    /* buffer size for a key */
    int vallen_max;    /* buffer size for a value */
    char protocol[16]; /* "PMI-1", "PMIx" or "none" */
};

struct portico_pmi_channel {
    int version; /* PORTICO_PMI_CHANNEL_VERSION */

    /* PMI_Init: becomes a user of the process's launcher connection (joining it if nobody has). */
    int (*join)(struct portico_pmi_identity *out, char *why, size_t why_len);
    /* PMI_Finalize: ends this user; the launcher's finalize waits for the job service to end too. */
    int (*leave)(char *why, size_t why_len);
    /* The job's KVS name (PMI_KVS_Get_my_name, PMI_Get_id), into name[0..length). */
    int (*kvsname)(char *name, int length, char *why, size_t why_len);
    int (*put)(const char *key, const char *value, char *why, size_t why_len);
    /* PMI_FAIL with "not found" when no rank has put key (and a barrier has made it visible). */
    int (*get)(const char *key, char *value, int length, char *why, size_t why_len);
    int (*barrier)(char *why, size_t why_len);
    int (*universe_size)(int *size, char *why, size_t why_len);
    int (*appnum)(int *appnum, char *why, size_t why_len);
    /* The ranks on this node, in rank order: *count of them, the first min(*count, length) into
     * ranks (ranks may be NULL with length 0). */
    int (*clique)(int *ranks, int length, int *count, char *why, size_t why_len);
    /* PMI-1's name service: op is "publish_name", "unpublish_name" or "lookup_name"; port is
     * read (publish) or written (lookup, port_len bytes). */
    int (*name_service)(const char *op, const char *service, char *port, int port_len, char *why, size_t why_len);
    /* PMI_Abort: the launcher ends the job; the process exits with code. Does not return. */
    void (*abort)(int code, const char *message);
};

/* The table (never NULL; its functions are thread-safe). */
const struct portico_pmi_channel *portico_pmi_channel_v1(void);

#ifdef __cplusplus
}
#endif

#endif /* PORTICO_PMI_CHANNEL_H */
