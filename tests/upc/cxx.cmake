# SPDX-License-Identifier: BSD-3-Clause
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
upc_exit_test(cxx.exit.global-exit upc_cxx_exit_test 3 6 global-exit)
upc_exit_test(cxx.exit.exception upc_cxx_exit_test 3 134 exception "escaped from main")
upc_exit_test(cxx.exit.lock-twice upc_cxx_exit_test 3 1 lock-twice "holds the lock already")
upc_exit_test(cxx.exit.return upc_cxx_exit_test 3 0 return)
