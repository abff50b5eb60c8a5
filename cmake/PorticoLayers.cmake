# SPDX-License-Identifier: BSD-3-Clause
# portico_layer(<target> [SEES <part>...])
#
# The layers of src/ (common, bootstrap, wire, transport and each transport, engine, capi) are
# separate libraries, and each compiles against an include root that holds only what it may use:
# a directory of symbolic links to the named parts (folders, or single headers such as
# transport/transport.hpp), made at configure time. An #include "layer/x.hpp" of anything else
# is then "No such file" at compile time, not a review comment. The same holds for the programs
# of tools/ and bench/: they see the public API (include/, and what the targets they link
# publish: clientkit, a client's headers) and the internal headers their rows name. The table of
# who sees what is in docs/ARCHITECTURE.md, and at the top of src/CMakeLists.txt.
#
# A part is named from src/ (common, transport/transport.hpp), or from the repository's root
# when it lies in tools/ or bench/ (bench/bench_settings.hpp): a program includes it by that name.
# Without SEES the target sees the public API only.
#
# Quoted includes are looked up next to the including file first; every layer includes by
# "layer/file.hpp" from the root, so that finds nothing outside the file's own folder.
function(portico_layer target)
  cmake_parse_arguments(L "" "" "SEES" ${ARGN})
  if(L_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "portico_layer(${target} SEES <part>...): unexpected '${L_UNPARSED_ARGUMENTS}'")
  endif()
  set(view "${CMAKE_BINARY_DIR}/layer-views/${target}")
  file(REMOVE_RECURSE "${view}")
  file(MAKE_DIRECTORY "${view}")
  foreach(part IN LISTS L_SEES)
    if(part MATCHES "^(tools|bench)/")
      set(source "${PROJECT_SOURCE_DIR}/${part}")
    else()
      set(source "${PROJECT_SOURCE_DIR}/src/${part}")
    endif()
    if(NOT EXISTS "${source}")
      message(FATAL_ERROR "portico_layer(${target}): ${source} does not exist")
    endif()
    get_filename_component(parent "${view}/${part}" DIRECTORY)
    file(MAKE_DIRECTORY "${parent}")
    file(CREATE_LINK "${source}" "${view}/${part}" SYMBOLIC)
  endforeach()
  target_include_directories(${target} PRIVATE "${view}" "${PROJECT_SOURCE_DIR}/include")
endfunction()
