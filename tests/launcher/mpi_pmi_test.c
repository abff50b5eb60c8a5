/* SPDX-License-Identifier: BSD-3-Clause */
/* An MPICH program (MPICH's simple PMI client inside libmpi) run by portico-run with remote
 * ranks: checks that init, the node layout from PMI_process_mapping and collectives work over
 * PMI_PORT/PMI_ID. Exit status 0 on success. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int rank = -1, size = 0, sum = 0, one = 1, node_size = 0;
    MPI_Comm node;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (sum != size) {
        fprintf(stderr, "mpi_pmi_test rank %d: allreduce gave %d, expected %d\n", rank, sum, size);
        return 1;
    }
    /* The ranks sharing a node, as MPICH learned it from the launcher. */
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &node_size);
    const char *expect = getenv("PORTICO_LOCAL_SIZE");
    if (expect == NULL || node_size != atoi(expect)) {
        fprintf(stderr, "mpi_pmi_test rank %d: %d ranks on my node, PORTICO_LOCAL_SIZE=%s\n", rank, node_size,
                expect != NULL ? expect : "(unset)");
        return 1;
    }
    MPI_Comm_free(&node);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("mpi_pmi_test: %d ranks OK\n", size);
    MPI_Finalize();
    return 0;
}
