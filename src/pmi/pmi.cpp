// SPDX-License-Identifier: BSD-3-Clause
// libpmi.so.0: the PMI-1 API (include/portico/pmi/pmi.h) on libportals' private channel entry
// (capi/pmi_channel.h), so that the application's PMI calls and Portico's own share one launcher
// connection. This file checks arguments, keeps the PMI_Init state and reports failures; the
// requests are the channel's.
#include <portico/pmi/pmi.h>

#include "capi/pmi_channel.h"

#include <cstdio>
#include <cstring>
#include <mutex>

#define PMI_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

const portico_pmi_channel &channel() {
    static const portico_pmi_channel *c = portico_pmi_channel_v1();
    return *c;
}

struct State {
    std::mutex mutex;
    bool initialized = false;
    portico_pmi_identity id{};
};

State &state() {
    static State *s = new State; // never destroyed: exit handlers may call PMI
    return *s;
}

// The identity, or PMI_ERR_INIT before PMI_Init.
int identity(portico_pmi_identity &out) {
    State &s = state();
    std::lock_guard g(s.mutex);
    if (!s.initialized) return PMI_ERR_INIT;
    out = s.id;
    return PMI_SUCCESS;
}

// A failure the caller cannot tell from the code alone (the launcher's reasons) is printed; a
// key that is not there ("not found") is an answer, not a failure worth a line, and the calls that
// always fail (pmi.h says why) print nothing.
int report(const char *call, int rc, const char *why) {
    if (rc == PMI_FAIL && std::strcmp(why, "not found") != 0) std::fprintf(stderr, "%s (Portico): %s\n", call, why);
    return rc;
}

// `name` is this job's KVS, else PMI_ERR_INVALID_ARG.
int check_kvsname(const char *name) {
    if (!name) return PMI_ERR_INVALID_ARG;
    char mine[1024];
    char why[256] = "";
    if (channel().kvsname(mine, sizeof mine, why, sizeof why) != PMI_SUCCESS) return PMI_ERR_INIT;
    return std::strcmp(name, mine) == 0 ? PMI_SUCCESS : PMI_ERR_INVALID_ARG;
}

} // namespace

PMI_EXPORT int PMI_Init(int *spawned) {
    if (!spawned) return PMI_ERR_INVALID_ARG;
    State &s = state();
    std::lock_guard g(s.mutex);
    if (!s.initialized) {
        char why[512] = "";
        portico_pmi_identity id{};
        if (const int rc = channel().join(&id, why, sizeof why); rc != PMI_SUCCESS) return report("PMI_Init", rc, why);
        s.id = id;
        s.initialized = true;
    }
    *spawned = s.id.spawned ? PMI_TRUE : PMI_FALSE;
    return PMI_SUCCESS;
}

PMI_EXPORT int PMI_Initialized(PMI_BOOL *initialized) {
    if (!initialized) return PMI_ERR_INVALID_ARG;
    State &s = state();
    std::lock_guard g(s.mutex);
    *initialized = s.initialized ? PMI_TRUE : PMI_FALSE;
    return PMI_SUCCESS;
}

PMI_EXPORT int PMI_Finalize(void) {
    State &s = state();
    std::lock_guard g(s.mutex);
    if (!s.initialized) return PMI_ERR_INIT;
    s.initialized = false;
    char why[512] = "";
    return report("PMI_Finalize", channel().leave(why, sizeof why), why);
}

PMI_EXPORT int PMI_Get_size(int *size) {
    if (!size) return PMI_ERR_INVALID_ARG;
    portico_pmi_identity id{};
    if (const int rc = identity(id); rc != PMI_SUCCESS) return rc;
    *size = id.size;
    return PMI_SUCCESS;
}

PMI_EXPORT int PMI_Get_rank(int *rank) {
    if (!rank) return PMI_ERR_INVALID_ARG;
    portico_pmi_identity id{};
    if (const int rc = identity(id); rc != PMI_SUCCESS) return rc;
    *rank = id.rank;
    return PMI_SUCCESS;
}

PMI_EXPORT int PMI_Get_universe_size(int *size) {
    char why[512] = "";
    return report("PMI_Get_universe_size", channel().universe_size(size, why, sizeof why), why);
}

PMI_EXPORT int PMI_Get_appnum(int *appnum) {
    char why[512] = "";
    return report("PMI_Get_appnum", channel().appnum(appnum, why, sizeof why), why);
}

PMI_EXPORT int PMI_Get_clique_size(int *size) {
    if (!size) return PMI_ERR_INVALID_ARG;
    char why[512] = "";
    return report("PMI_Get_clique_size", channel().clique(nullptr, 0, size, why, sizeof why), why);
}

PMI_EXPORT int PMI_Get_clique_ranks(int ranks[], int length) {
    if (!ranks || length < 0) return PMI_ERR_INVALID_ARG;
    char why[512] = "";
    int count = 0;
    if (const int rc = channel().clique(ranks, length, &count, why, sizeof why); rc != PMI_SUCCESS)
        return report("PMI_Get_clique_ranks", rc, why);
    return count > length ? PMI_ERR_INVALID_LENGTH : PMI_SUCCESS;
}

PMI_EXPORT int PMI_Barrier(void) {
    char why[512] = "";
    return report("PMI_Barrier", channel().barrier(why, sizeof why), why);
}

PMI_EXPORT int PMI_Abort(int exit_code, const char error_msg[]) {
    channel().abort(exit_code, error_msg);
    return PMI_FAIL; // not reached
}

PMI_EXPORT int PMI_KVS_Get_my_name(char kvsname[], int length) {
    char why[512] = "";
    return report("PMI_KVS_Get_my_name", channel().kvsname(kvsname, length, why, sizeof why), why);
}

PMI_EXPORT int PMI_Get_id(char id_str[], int length) { return PMI_KVS_Get_my_name(id_str, length); }
PMI_EXPORT int PMI_Get_kvs_domain_id(char id_str[], int length) { return PMI_KVS_Get_my_name(id_str, length); }

PMI_EXPORT int PMI_KVS_Get_name_length_max(int *length) {
    if (!length) return PMI_ERR_INVALID_ARG;
    portico_pmi_identity id{};
    if (const int rc = identity(id); rc != PMI_SUCCESS) return rc;
    *length = id.kvsname_max;
    return PMI_SUCCESS;
}

PMI_EXPORT int PMI_Get_id_length_max(int *length) { return PMI_KVS_Get_name_length_max(length); }

PMI_EXPORT int PMI_KVS_Get_key_length_max(int *length) {
    if (!length) return PMI_ERR_INVALID_ARG;
    portico_pmi_identity id{};
    if (const int rc = identity(id); rc != PMI_SUCCESS) return rc;
    *length = id.keylen_max;
    return PMI_SUCCESS;
}

PMI_EXPORT int PMI_KVS_Get_value_length_max(int *length) {
    if (!length) return PMI_ERR_INVALID_ARG;
    portico_pmi_identity id{};
    if (const int rc = identity(id); rc != PMI_SUCCESS) return rc;
    *length = id.vallen_max;
    return PMI_SUCCESS;
}

PMI_EXPORT int PMI_KVS_Put(const char kvsname[], const char key[], const char value[]) {
    if (const int rc = check_kvsname(kvsname); rc != PMI_SUCCESS) return rc;
    char why[512] = "";
    return report("PMI_KVS_Put", channel().put(key, value, why, sizeof why), why);
}

PMI_EXPORT int PMI_KVS_Commit(const char kvsname[]) { return check_kvsname(kvsname); }

PMI_EXPORT int PMI_KVS_Get(const char kvsname[], const char key[], char value[], int length) {
    if (const int rc = check_kvsname(kvsname); rc != PMI_SUCCESS) return rc;
    char why[512] = "";
    return report("PMI_KVS_Get", channel().get(key, value, length, why, sizeof why), why);
}

PMI_EXPORT int PMI_KVS_Create(char kvsname[], int length) {
    (void)kvsname;
    (void)length;
    return PMI_FAIL; // no launcher serves other key-value spaces (pmi.h)
}

PMI_EXPORT int PMI_KVS_Destroy(const char kvsname[]) {
    (void)kvsname;
    return PMI_FAIL; // no launcher serves other key-value spaces (pmi.h)
}

PMI_EXPORT int PMI_KVS_Iter_first(const char kvsname[], char key[], int key_len, char val[], int val_len) {
    (void)kvsname, (void)key, (void)key_len, (void)val, (void)val_len;
    return PMI_FAIL; // no launcher enumerates the key-value space (pmi.h)
}

PMI_EXPORT int PMI_KVS_Iter_next(const char kvsname[], char key[], int key_len, char val[], int val_len) {
    (void)kvsname, (void)key, (void)key_len, (void)val, (void)val_len;
    return PMI_FAIL; // no launcher enumerates the key-value space (pmi.h)
}

PMI_EXPORT int PMI_Publish_name(const char service_name[], const char port[]) {
    char why[512] = "";
    return report("PMI_Publish_name",
                  channel().name_service("publish_name", service_name, const_cast<char *>(port), 0, why, sizeof why),
                  why);
}

PMI_EXPORT int PMI_Unpublish_name(const char service_name[]) {
    char why[512] = "";
    return report("PMI_Unpublish_name",
                  channel().name_service("unpublish_name", service_name, nullptr, 0, why, sizeof why), why);
}

PMI_EXPORT int PMI_Lookup_name(const char service_name[], char port[]) {
    // PMI-1 gives no length for port: MPICH's client writes at most MPI_MAX_PORT_NAME (256) bytes.
    char why[512] = "";
    return report("PMI_Lookup_name", channel().name_service("lookup_name", service_name, port, 256, why, sizeof why),
                  why);
}

PMI_EXPORT int PMI_Spawn_multiple(int count, const char *cmds[], const char **argvs[], const int maxprocs[],
                                  const int info_keyval_sizesp[], const PMI_keyval_t *info_keyval_vectors[],
                                  int preput_keyval_size, const PMI_keyval_t preput_keyval_vector[], int errors[]) {
    (void)cmds, (void)argvs, (void)info_keyval_sizesp, (void)info_keyval_vectors, (void)preput_keyval_size,
        (void)preput_keyval_vector;
    if (errors && maxprocs)
        for (int i = 0; i < count; ++i)
            for (int p = 0; p < maxprocs[i]; ++p) *errors++ = PMI_FAIL;
    return PMI_FAIL; // a Portico job has a fixed set of processes (pmi.h)
}

PMI_EXPORT int PMI_Parse_option(int num_args, char *args[], int *num_parsed, PMI_keyval_t **keyvalp, int *size) {
    if (num_args < 1) return PMI_ERR_INVALID_NUM_ARGS;
    if (!args) return PMI_ERR_INVALID_ARGS;
    if (!num_parsed) return PMI_ERR_INVALID_NUM_PARSED;
    if (!keyvalp) return PMI_ERR_INVALID_KEYVALP;
    if (!size) return PMI_ERR_INVALID_SIZE;
    *num_parsed = 0;
    *keyvalp = nullptr;
    *size = 0;
    return PMI_SUCCESS;
}

PMI_EXPORT int PMI_Args_to_keyval(int *argcp, char *((*argvp)[]), PMI_keyval_t **keyvalp, int *size) {
    if (!argcp || !argvp || !keyvalp || !size) return PMI_ERR_INVALID_ARG;
    *keyvalp = nullptr;
    *size = 0;
    return PMI_SUCCESS;
}

PMI_EXPORT int PMI_Free_keyvals(PMI_keyval_t keyvalp[], int size) {
    return keyvalp == nullptr || size == 0 ? PMI_SUCCESS : PMI_ERR_INVALID_ARG;
}

PMI_EXPORT int PMI_Get_options(char *str, int *length) {
    if (!str || !length) return PMI_ERR_INVALID_ARG;
    if (*length < 1) return PMI_ERR_NOMEM;
    str[0] = '\0';
    *length = 1;
    return PMI_SUCCESS;
}
