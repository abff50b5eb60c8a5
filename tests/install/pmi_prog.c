/* SPDX-License-Identifier: BSD-3-Clause */
/* The README's PMI example (install.readme builds it against an installed Portico, through
 * pkg-config portico-pmi and as GASNet's configure would from the PMI home): each process puts its
 * rank, and after the barrier reads its neighbour's. */
#include <pmi.h>
#include <stdio.h>
#include <string.h>

int main(void) {
    int spawned, rank, size, namemax;
    char kvs[256], key[64], value[64], want[64];
    if (PMI_Init(&spawned) != PMI_SUCCESS || PMI_Get_rank(&rank) != PMI_SUCCESS || PMI_Get_size(&size) != PMI_SUCCESS ||
        PMI_KVS_Get_name_length_max(&namemax) != PMI_SUCCESS || namemax > (int)sizeof kvs ||
        PMI_KVS_Get_my_name(kvs, namemax) != PMI_SUCCESS)
        return 1;
    snprintf(key, sizeof key, "rank.%d", rank);
    snprintf(value, sizeof value, "hello-from-%d", rank);
    if (PMI_KVS_Put(kvs, key, value) != PMI_SUCCESS || PMI_KVS_Commit(kvs) != PMI_SUCCESS ||
        PMI_Barrier() != PMI_SUCCESS)
        return 1;
    const int next = (rank + 1) % size;
    snprintf(key, sizeof key, "rank.%d", next);
    snprintf(want, sizeof want, "hello-from-%d", next);
    if (PMI_KVS_Get(kvs, key, value, sizeof value) != PMI_SUCCESS) return 1;
    const int ok = strcmp(value, want) == 0;
    if (ok) printf("pmi ok: rank %d of %d read '%s'\n", rank, size, value);
    PMI_Barrier();
    PMI_Finalize();
    return ok ? 0 : 1;
}
