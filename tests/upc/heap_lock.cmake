# SPDX-License-Identifier: BSD-3-Clause
# The shared heap and locks (docs/UPC.md's cases 22-38): heap_test.c, lock_test.c.
upc_c_test(upc_heap_test heap_test.c)
upc_mp_tests(heap upc_heap_test)
# Case 28 with a small heap, so that it runs out.
upc_mp_tests(heap.exhaust upc_heap_test ARGS exhaust ENV UPC_SHARED_HEAP_SIZE=16M)

upc_c_test(upc_lock_test lock_test.c)
upc_mp_tests(lock upc_lock_test)

# Invalid frees and lock calls end the job with a clear message (run_exit_test.sh: exit code,
# message, no process left).
upc_exit_test(heap.fatal.double-free upc_heap_test 2 1 double-free "upc_free: .* freed twice")
upc_exit_test(heap.fatal.bad-free upc_heap_test 2 1 bad-free "upc_free: .* not a block of the shared heap")
upc_exit_test(lock.fatal.lock-null upc_lock_test 2 1 lock-null "upc_lock: null lock pointer")
upc_exit_test(lock.fatal.lock-bad upc_lock_test 2 1 lock-bad "upc_lock: .* not a lock [(]bad magic[)]")
upc_exit_test(lock.fatal.lock-freed upc_lock_test 2 1 lock-freed "upc_lock: .* not a lock [(]bad magic[)]")
upc_exit_test(lock.fatal.lock-twice upc_lock_test 2 1 lock-twice "upc_lock: this thread holds the lock already")
upc_exit_test(lock.fatal.unlock-not-held upc_lock_test 2 1 unlock-not-held "upc_unlock: this thread does not hold the lock")
