/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmi.h — the PMI-1 process-management API (as MPICH defined it), implemented by Portico's
 * libpmi.so.0 on the launcher connection Portico itself uses: portico-run, MPICH's mpiexec
 * (hydra), Slurm's pmi2 plugin (PMI_FD) and PMIx launchers (Open MPI's mpirun, srun --mpi=pmix).
 *
 * Installed as a "PMI home", <prefix>/lib/portico/pmi/{include/pmi.h,lib/libpmi.so}, out of every
 * default search path so that it never shadows a system or Slurm libpmi by accident: a program
 * chooses it with pkg-config portico-pmi, or GASNet's configure with
 * --with-pmi=<prefix>/lib/portico/pmi --with-pmi-version=1. PMI-2 (pmi2.h) is not provided.
 *
 * The application's calls and Portico's own (a logical NI's rank map, portico_runtime.h) share the
 * one connection: they take turns request by request, and the launcher's finalize is sent when the
 * last of them has finalized (PMI_Finalize, and Portico's last PtlFini or
 * portico_runtime_finalize; at the latest at a normal exit).
 *
 * Return values: PMI_SUCCESS, or one of the codes below. PMI_FAIL means the launcher refused or
 * could not be reached (the reason is printed on stderr), a PMI_KVS_Get found no value, or the
 * call is one that always fails (each says why below; they print nothing). The PMI_ERR_* codes
 * report the caller's arguments and print nothing. Every call is thread-safe.
 *
 * Without a launcher (no PMI_FD, PMI_PORT or PMIx server) PMI_Init succeeds as rank 0 of a job of
 * one, whose key-value space lives in the process; a process that a launcher started as one of
 * several without a process-management interface (srun --mpi=none) fails PMI_Init instead.
 */
#ifndef PORTICO_PMI_H
#define PORTICO_PMI_H

#ifdef __cplusplus
extern "C" {
#endif

#define PMI_SUCCESS 0
#define PMI_FAIL -1
#define PMI_ERR_INIT 1                /* not initialized */
#define PMI_ERR_NOMEM 2               /* a buffer given is too small, or no memory */
#define PMI_ERR_INVALID_ARG 3         /* a NULL pointer, or a KVS name that is not this job's */
#define PMI_ERR_INVALID_KEY 4         /* empty, or holds a space, newline, NUL or backslash */
#define PMI_ERR_INVALID_KEY_LENGTH 5  /* longer than PMI_KVS_Get_key_length_max() - 1 */
#define PMI_ERR_INVALID_VAL 6         /* empty, or holds a space, newline, NUL or backslash */
#define PMI_ERR_INVALID_VAL_LENGTH 7  /* longer than PMI_KVS_Get_value_length_max() - 1 */
#define PMI_ERR_INVALID_LENGTH 8      /* an output buffer too small for the answer */
#define PMI_ERR_INVALID_NUM_ARGS 9    /* PMI_Parse_option: num_args < 1 */
#define PMI_ERR_INVALID_ARGS 10       /* PMI_Parse_option: args is NULL */
#define PMI_ERR_INVALID_NUM_PARSED 11 /* PMI_Parse_option: num_parsed is NULL */
#define PMI_ERR_INVALID_KEYVALP 12    /* PMI_Parse_option: keyvalp is NULL */
#define PMI_ERR_INVALID_SIZE 13       /* PMI_Parse_option: size is NULL */

typedef int PMI_BOOL;
#define PMI_TRUE 1
#define PMI_FALSE 0

/* A key and its value, for PMI_Spawn_multiple and the option calls. */
typedef struct PMI_keyval_t {
    const char *key;
    char *val;
} PMI_keyval_t;

/* --- the job ------------------------------------------------------------------------------------ */

/* Connects to the launcher (or joins the connection Portico already has). *spawned: PMI_TRUE when
 * the process was started by another job's spawn (PMI_SPAWNED=1), which Portico's launcher never
 * does. Calling it again while initialized is harmless. */
int PMI_Init(int *spawned);
/* PMI_TRUE between PMI_Init and PMI_Finalize. */
int PMI_Initialized(PMI_BOOL *initialized);
/* Ends this process's use of PMI. Call it once every rank is done with the key-value space (a
 * PMI_Barrier first): the launcher may close the connection once the last user has finalized. */
int PMI_Finalize(void);
int PMI_Get_size(int *size);
int PMI_Get_rank(int *rank);
/* How many processes the launcher could run; the job's size when it does not say. */
int PMI_Get_universe_size(int *size);
/* The application number of this job (0 under portico-run, which runs one application). */
int PMI_Get_appnum(int *appnum);
/* The ranks on this node, as the launcher placed them (its PMI_process_mapping key; under PMIx,
 * PMIX_LOCAL_PEERS). PMI_FAIL when the launcher does not describe the placement. */
int PMI_Get_clique_size(int *size);
/* The first `length` of them, in rank order; PMI_ERR_INVALID_LENGTH when length is smaller than
 * PMI_Get_clique_size's answer. */
int PMI_Get_clique_ranks(int ranks[], int length);
/* Returns when every rank of the job has called it; puts before it are visible to every rank after
 * it. */
int PMI_Barrier(void);
/* Ends the whole job: the launcher kills every rank and reports error_msg; this process exits with
 * exit_code. Does not return. */
int PMI_Abort(int exit_code, const char error_msg[]);

/* The job's id (its KVS name), and the buffer size it needs. */
int PMI_Get_id(char id_str[], int length);
int PMI_Get_kvs_domain_id(char id_str[], int length);
int PMI_Get_id_length_max(int *length);

/* --- the key-value space ------------------------------------------------------------------------ */

/* The job's KVS name; PMI_ERR_INVALID_LENGTH when length is too small. */
int PMI_KVS_Get_my_name(char kvsname[], int length);
/* Buffer sizes (terminating NUL included) for a KVS name, a key and a value. A value may be longer
 * under portico-run (its portico_vallen_max) than under other launchers. */
int PMI_KVS_Get_name_length_max(int *length);
int PMI_KVS_Get_key_length_max(int *length);
int PMI_KVS_Get_value_length_max(int *length);
/* Puts key=value into kvsname (this job's; PMI_ERR_INVALID_ARG for any other). It becomes visible
 * to every rank at the next PMI_Barrier. Put each key once: portico-run and hydra keep the last
 * value of a key put again, PMIx launchers may go on serving the first. Keys and values are text
 * without spaces, newlines, NULs or backslashes (the wire protocol cannot carry them: encode
 * binary data). */
int PMI_KVS_Put(const char kvsname[], const char key[], const char value[]);
/* Nothing to do: puts go to the launcher at once. */
int PMI_KVS_Commit(const char kvsname[]);
/* The value of key, into value[0..length); PMI_FAIL when no rank has put it (or no barrier has
 * made it visible yet), PMI_ERR_INVALID_LENGTH when it does not fit. */
int PMI_KVS_Get(const char kvsname[], const char key[], char value[], int length);
/* PMI_FAIL: no launcher Portico runs under serves other key-value spaces (portico-run and hydra
 * answer create_kvs/destroy_kvs with an error). */
int PMI_KVS_Create(char kvsname[], int length);
int PMI_KVS_Destroy(const char kvsname[]);
/* PMI_FAIL: no launcher Portico runs under enumerates the key-value space (portico-run answers
 * getbyidx with an error, hydra does not know the request). */
int PMI_KVS_Iter_first(const char kvsname[], char key[], int key_len, char val[], int val_len);
int PMI_KVS_Iter_next(const char kvsname[], char key[], int key_len, char val[], int val_len);

/* --- name publishing ---------------------------------------------------------------------------- */

/* The launcher's name service (PMI-1 publish_name, unpublish_name, lookup_name): PMI_FAIL where
 * the launcher has none — portico-run, hydra without its -nameserver, and PMIx launchers (libpmi
 * speaks PMI-1 requests only). */
int PMI_Publish_name(const char service_name[], const char port[]);
int PMI_Unpublish_name(const char service_name[]);
/* port: a buffer of at least 256 bytes (MPI_MAX_PORT_NAME), as with MPICH's libpmi. */
int PMI_Lookup_name(const char service_name[], char port[]);

/* --- dynamic processes and options -------------------------------------------------------------- */

/* PMI_FAIL, with every errors[i] set to PMI_FAIL: a Portico job has a fixed set of processes
 * (portico-run cannot spawn, and a logical NI's rank map is fixed at its creation). */
int PMI_Spawn_multiple(int count, const char *cmds[], const char **argvs[], const int maxprocs[],
                       const int info_keyval_sizesp[], const PMI_keyval_t *info_keyval_vectors[],
                       int preput_keyval_size, const PMI_keyval_t preput_keyval_vector[], int errors[]);
/* Portico's PMI has no command-line options of its own: PMI_Parse_option parses none (*num_parsed
 * 0, *keyvalp NULL, *size 0), PMI_Args_to_keyval takes none from the command line (which it leaves
 * as it is; *keyvalp NULL, *size 0), PMI_Free_keyvals accepts what they return (NULL or size 0;
 * anything else is PMI_ERR_INVALID_ARG: these calls never allocate keyvals), and PMI_Get_options
 * describes none (an empty string, *length set to 1; PMI_ERR_NOMEM when *length < 1). */
int PMI_Parse_option(int num_args, char *args[], int *num_parsed, PMI_keyval_t **keyvalp, int *size);
int PMI_Args_to_keyval(int *argcp, char *((*argvp)[]), PMI_keyval_t **keyvalp, int *size);
int PMI_Free_keyvals(PMI_keyval_t keyvalp[], int size);
int PMI_Get_options(char *str, int *length);

#ifdef __cplusplus
}
#endif

#endif /* PORTICO_PMI_H */
