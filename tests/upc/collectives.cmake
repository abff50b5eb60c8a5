# SPDX-License-Identifier: BSD-3-Clause
# The collectives (upc_collective.h): docs/UPC.md's cases 45-53 under every configuration.
upc_c_test(upc_collectives_test collectives_test.c)
upc_mp_tests(coll upc_collectives_test)

# Case 54: UPC_COLL_CHECK=1 catches arguments that are not single-valued. Valid calls pass under
# every configuration; each kind of mismatch must end the job with the library's message.
upc_c_test(upc_coll_check_test coll_check_test.c)
upc_mp_tests(coll.check.ok upc_coll_check_test ARGS ok ENV UPC_COLL_CHECK=1)
foreach(case "nbytes|argument nbytes is not single-valued" "function|collective mismatch: this thread called"
             "op|argument op is not single-valued" "perm|perm is not a permutation"
             "notify|called between upc_notify and upc_wait")
  string(REPLACE "|" ";" parts "${case}")
  list(GET parts 0 mode)
  list(GET parts 1 message)
  portico_add_mp_test(upc.coll.check.${mode}.n4 upc_coll_check_test 4 TIMEOUT 60 ARGS ${mode}
                      ENV UPC_COLL_CHECK=1)
  portico_add_mp_test(upc.coll.check.${mode}.tcp.n2 upc_coll_check_test 2 TIMEOUT 60 ARGS ${mode}
                      ENV UPC_COLL_CHECK=1 PORTICO_TRANSPORT=tcp UPC_NODE_LOCAL_MEM=0)
  set_tests_properties(upc.coll.check.${mode}.n4 upc.coll.check.${mode}.tcp.n2
                       PROPERTIES PASS_REGULAR_EXPRESSION "${message}")
endforeach()
