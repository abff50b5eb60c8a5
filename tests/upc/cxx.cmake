# The C++ front end (portico/upc.hpp): its conformance test under every configuration, and the
# three examples of docs/UPC.md (examples/upc) run as tests on four threads.
upc_cxx_test(upc_cxx_test cxx_test.cpp)
upc_mp_tests(cxx upc_cxx_test TIMEOUT 60)

# The examples exist once examples/CMakeLists.txt has add_subdirectory(upc) (examples/ is configured
# before tests/). Each checks its own result and exits non-zero when it is wrong.
if(TARGET upc_vector_add AND TARGET upc_heat AND TARGET upc_int_sort)
  portico_add_mp_test(upc.example.vector_add upc_vector_add 4 TIMEOUT 60 ARGS 1000)
  portico_add_mp_test(upc.example.heat upc_heat 4 TIMEOUT 60 ARGS 5000 1e-2)
  portico_add_mp_test(upc.example.int_sort upc_int_sort 4 TIMEOUT 60 ARGS 7)
endif()

# How a C++ front-end job ends: the exit code the launcher reports, the message, nothing left.
upc_cxx_test(upc_cxx_exit_test cxx_exit_test.cpp)
foreach(case "global-exit|6|" "exception|134|escaped from main" "lock-twice|1|holds the lock already" "return|0|")
  string(REPLACE "|" ";" parts "${case}")
  list(GET parts 0 mode)
  list(GET parts 1 code)
  list(GET parts 2 message)
  foreach(transport shm tcp)
    set(name upc.cxx.exit.${mode})
    set(env "")
    if(transport STREQUAL tcp)
      set(name ${name}.tcp)
      set(env PORTICO_TRANSPORT=tcp UPC_NODE_LOCAL_MEM=0)
    endif()
    add_test(NAME ${name}
             COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/run_exit_test.sh $<TARGET_FILE:portico-run>
                     $<TARGET_FILE:upc_cxx_exit_test> 3 ${code} ${mode} "${message}")
    set_tests_properties(${name} PROPERTIES TIMEOUT 90 PROCESSORS 3 ENVIRONMENT "${env}")
  endforeach()
endforeach()
