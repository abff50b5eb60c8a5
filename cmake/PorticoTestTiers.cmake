# SPDX-License-Identifier: BSD-3-Clause
# Test tiers: ctest labels that say what a test costs and needs, so that a developer can run the
# fast tier first and leave out what a machine lacks. Every test carries at least one (the test
# tests.tiers checks it):
#   quick            a test program on its own (no launcher, no job of ranks), needing nothing
#                    but this build; seconds each, the whole tier under a minute on 2 cores
#   slow             one process too, but long: a configure, an install, a build, callgrind,
#                    a fuzzing run, a stress test
#   multiprocess     a job of several processes: portico-run's, another launcher's, or peers
#                    that the test starts itself
#   root             needs root (network or mount namespaces, Slurm's daemons, another user);
#                    without it ctest reports the test as skipped
#   external-client  runs software from outside Portico: Open MPI, MPICH's hydra, Slurm,
#                    libfabric's fi_pingpong, GASNet's conduits and tests; skipped where missing
# quick stands alone: a test is quick when no other tier applies. Other labels (generic-path,
# clients, gasnet, ompi) say what a test covers and come on top.
#
#   ctest --test-dir build -L quick                       the fast tier
#   ctest --test-dir build -LE 'root|external-client'     all that needs only this build
set(PORTICO_TEST_TIERS quick slow multiprocess root external-client)

# The tiers of a test whose definition names none, from its name (CMake regular expressions) and
# its PROCESSORS: several processors make it multiprocess; a test in none of the lists is quick.
# Families that a helper defines (portico_add_mp_test and the like) carry their tiers from it.
set(PORTICO_TIER_ROOT
    "^multihost\\."           # tests/multihost/netns.sh: network namespaces
    "^psm2\\.client\\."       # tests/psm2/clients/fake_hfi.sh: a mount namespace
    "^launcher\\.slurm$"      # munged, slurmctld and slurmd
    "\\.other-user$")         # a prober run as another user (setpriv)
set(PORTICO_TIER_EXTERNAL_CLIENT
    "^clients\\."             # Open MPI, MPICH and GASNet built against Portico
    "^psm2\\.client\\."       # fi_pingpong, libfabric, Open MPI over libpsm2
    "^launcher\\.slurm$"
    "^launcher\\.(ompi|hydra)\\."
    "^launcher\\.pmix\\.launcher_death$"
    "hydra"                   # MPICH's launcher, and MPICH's PMI client
    "mpich")
set(PORTICO_TIER_MULTIPROCESS # jobs that do not ask ctest for several PROCESSORS
    "^launcher\\.slurm$"
    "^launcher\\.nofile\\."
    "^bench\\.startup\\."
    "^psm2\\.client\\."
    "^clients\\.(gasnet1\\.|ompi\\.[a-z]+\\.n|mpich\\.(pt2pt|coll|rma|comm))")
set(PORTICO_TIER_SLOW
    "^launcher\\.configure_after_installing_mpich$"
    "^install\\."
    "^clients\\.[a-z0-9]+\\.build$"
    "^bench\\.[a-z]+_instructions\\."  # callgrind
    "^fuzz\\.")

# portico_test_tiers(): labels, at the end of the calling directory, each of its tests that has
# no tier yet (as above). Every CMakeLists.txt that registers tests calls it.
function(portico_test_tiers)
  cmake_language(DEFER CALL _portico_label_tests_by_tier)
endfunction()

function(_portico_tier_matches out name)
  set(hit FALSE)
  foreach(re IN LISTS ARGN)
    if(name MATCHES "${re}")
      set(hit TRUE)
    endif()
  endforeach()
  set(${out} ${hit} PARENT_SCOPE)
endfunction()

function(_portico_label_tests_by_tier)
  get_directory_property(tests TESTS)
  foreach(test IN LISTS tests)
    get_test_property(${test} LABELS labels)
    if(NOT labels)
      set(labels)
    endif()
    set(has_tier FALSE)
    foreach(tier IN LISTS PORTICO_TEST_TIERS)
      if(tier IN_LIST labels)
        set(has_tier TRUE)
      endif()
    endforeach()
    if(has_tier)
      continue()
    endif()
    set(tiers)
    foreach(tier root external-client multiprocess slow)
      string(TOUPPER "${tier}" var)
      string(REPLACE "-" "_" var "${var}")
      _portico_tier_matches(hit "${test}" ${PORTICO_TIER_${var}})
      if(hit)
        list(APPEND tiers ${tier})
      endif()
    endforeach()
    get_test_property(${test} PROCESSORS processors)
    if(processors GREATER 1 AND NOT slow IN_LIST tiers AND NOT multiprocess IN_LIST tiers)
      list(APPEND tiers multiprocess) # a slow test's processors are its build's
    endif()
    if(NOT tiers)
      set(tiers quick)
    endif()
    list(APPEND labels ${tiers})
    set_tests_properties(${test} PROPERTIES LABELS "${labels}")
  endforeach()
endfunction()
