# SPDX-License-Identifier: BSD-3-Clause
# portico_version_script(<shared library target> <version script>)
#
# The library exports exactly the symbols the linker version script lists, under its version
# nodes (e.g. PORTALS_4.3 for libportals.so.4; a future libpsm2.so.2 would pass a script with a
# PSM2_1.0 node). Visibility attributes alone are not enough: the static helper libraries linked
# into a shared library are built with default visibility, and their symbols would become part of
# its ABI. Registers the test <target>.exports, which compares `nm -D --defined-only` of the built
# library with the script both ways (nothing unlisted exported, nothing listed missing: GNU ld
# ignores listed names that are not defined).
function(portico_version_script target script)
  get_filename_component(script "${script}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  target_link_options(${target} PRIVATE "LINKER:--version-script=${script}")
  # A changed script must relink the library.
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS "${script}")
  if(PORTICO_TESTS)
    find_program(PORTICO_NM NAMES nm REQUIRED)
    add_test(NAME ${target}.exports
             COMMAND ${PROJECT_SOURCE_DIR}/cmake/check_exports.sh ${PORTICO_NM}
                     $<TARGET_FILE:${target}> "${script}")
    set_tests_properties(${target}.exports PROPERTIES TIMEOUT 300 LABELS quick) # a hang guard: nm and sort take seconds, minutes on a saturated machine
  endif()
endfunction()
