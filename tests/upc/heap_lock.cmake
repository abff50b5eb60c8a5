# The shared heap and locks (notes §5 cases 22-38): heap_test.c, lock_test.c.
upc_c_test(upc_heap_test heap_test.c)
upc_mp_tests(heap upc_heap_test)
# Case 28 with a small heap, so that it runs out.
upc_mp_tests(heap.exhaust upc_heap_test ARGS exhaust ENV UPC_SHARED_HEAP_SIZE=16M)

upc_c_test(upc_lock_test lock_test.c)
upc_mp_tests(lock upc_lock_test)

# Invalid frees and lock calls end the job with a clear message (run_exit_test.sh: exit code,
# message, no process left).
foreach(case "heap|upc_heap_test|double-free|upc_free: .* freed twice"
             "heap|upc_heap_test|bad-free|upc_free: .* not a block of the shared heap"
             "lock|upc_lock_test|lock-null|upc_lock: null lock pointer"
             "lock|upc_lock_test|lock-bad|upc_lock: .* not a lock [(]bad magic[)]"
             "lock|upc_lock_test|lock-freed|upc_lock: .* not a lock [(]bad magic[)]"
             "lock|upc_lock_test|lock-twice|upc_lock: this thread holds the lock already"
             "lock|upc_lock_test|unlock-not-held|upc_unlock: this thread does not hold the lock")
  string(REPLACE "|" ";" parts "${case}")
  list(GET parts 0 area)
  list(GET parts 1 target)
  list(GET parts 2 mode)
  list(GET parts 3 message)
  foreach(transport shm tcp)
    set(name upc.${area}.fatal.${mode})
    set(env "")
    if(transport STREQUAL tcp)
      set(name ${name}.tcp)
      set(env PORTICO_TRANSPORT=tcp UPC_NODE_LOCAL_MEM=0)
    endif()
    add_test(NAME ${name}
             COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/run_exit_test.sh $<TARGET_FILE:portico-run>
                     $<TARGET_FILE:${target}> 2 1 ${mode} "${message}")
    set_tests_properties(${name} PROPERTIES TIMEOUT 90 PROCESSORS 2 ENVIRONMENT "${env}")
  endforeach()
endforeach()
