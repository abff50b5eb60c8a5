# The runtime's core: accesses, transfers, the memory model, barriers, pointer functions.
upc_c_test(upc_core_test core_test.c)
upc_mp_tests(core upc_core_test)

# How a job ends: the exit code the launcher reports, the message, nothing left behind.
upc_c_test(upc_exit_test exit_test.c)
foreach(case "global-exit|3|" "global-exit-computing|4|" "return|0|" "crash|137|"
             "mismatch|1|barrier id mismatch" "double-notify|1|upc_notify called twice"
             "wait-without-notify|1|upc_wait called without" "out-of-range|1|out of range")
  string(REPLACE "|" ";" parts "${case}")
  list(GET parts 0 mode)
  list(GET parts 1 code)
  list(GET parts 2 message)
  foreach(transport shm tcp)
    set(name upc.exit.${mode})
    set(env "")
    if(transport STREQUAL tcp)
      set(name ${name}.tcp)
      set(env PORTICO_TRANSPORT=tcp UPC_NODE_LOCAL_MEM=0)
    endif()
    add_test(NAME ${name}
             COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/run_exit_test.sh $<TARGET_FILE:portico-run>
                     $<TARGET_FILE:upc_exit_test> 3 ${code} ${mode} "${message}")
    set_tests_properties(${name} PROPERTIES TIMEOUT 90 PROCESSORS 3 ENVIRONMENT "${env}")
  endforeach()
endforeach()

# Shared statics in the upc_shared section, as a UPC compiler emits them.
upc_c_test(upc_statics_test statics_test.c)
upc_mp_tests(statics upc_statics_test THREADS 1 2 4)

# 10^4 barriers with uneven work, also on 7 and 16 threads (more processes than cores).
upc_c_test(upc_barrier_stress_test barrier_stress_test.c)
upc_mp_tests(barrier_stress upc_barrier_stress_test THREADS 2 7 16 TIMEOUT 240)

# Random strict/relaxed accesses of every size and kind against a shadow copy (notes §5 case 56),
# also on 16 threads.
upc_c_test(upc_memory_model_test memory_model_test.c)
upc_mp_tests(memory_model upc_memory_model_test THREADS 1 2 4 8 16 TIMEOUT 240)
portico_add_mp_test(upc.memory_model.n64 upc_memory_model_test 64 TIMEOUT 240 ARGS 500 ENV UPC_SHARED_HEAP_SIZE=16M)
portico_add_mp_test(upc.memory_model.portals.n16 upc_memory_model_test 16 TIMEOUT 240 ARGS 1000
                    ENV UPC_NODE_LOCAL_MEM=0)
