# SPDX-License-Identifier: BSD-3-Clause
# The runtime's core: accesses, transfers, the memory model, barriers, pointer functions.
upc_c_test(upc_core_test core_test.c)
upc_mp_tests(core upc_core_test)

# How a job ends: the exit code the launcher reports, the message, nothing left behind.
upc_c_test(upc_exit_test exit_test.c)
upc_exit_test(exit.global-exit upc_exit_test 3 3 global-exit)
upc_exit_test(exit.global-exit-computing upc_exit_test 3 4 global-exit-computing)
upc_exit_test(exit.return upc_exit_test 3 0 return)
upc_exit_test(exit.crash upc_exit_test 3 137 crash)
upc_exit_test(exit.mismatch upc_exit_test 3 1 mismatch "barrier id mismatch")
upc_exit_test(exit.double-notify upc_exit_test 3 1 double-notify "upc_notify called twice")
upc_exit_test(exit.wait-without-notify upc_exit_test 3 1 wait-without-notify "upc_wait called without")
upc_exit_test(exit.out-of-range upc_exit_test 3 1 out-of-range "out of range")

# Shared statics in the upc_shared section, as a UPC compiler emits them.
upc_c_test(upc_statics_test statics_test.c)
upc_mp_tests(statics upc_statics_test THREADS 1 2 4)

# 10^4 barriers with uneven work, also on 7 and 16 threads (more processes than cores).
upc_c_test(upc_barrier_stress_test barrier_stress_test.c)
upc_mp_tests(barrier_stress upc_barrier_stress_test THREADS 2 7 16 TIMEOUT 240)

# Random strict/relaxed accesses of every size and kind against a shadow copy (docs/UPC.md's case
# 56), also on 16 threads.
upc_c_test(upc_memory_model_test memory_model_test.c)
upc_mp_tests(memory_model upc_memory_model_test THREADS 1 2 4 8 16 TIMEOUT 240)
portico_add_mp_test(upc.memory_model.n64 upc_memory_model_test 64 TIMEOUT 240 ARGS 500 ENV UPC_SHARED_HEAP_SIZE=16M)
portico_add_mp_test(upc.memory_model.portals.n16 upc_memory_model_test 16 TIMEOUT 240 ARGS 1000
                    ENV UPC_NODE_LOCAL_MEM=0)
