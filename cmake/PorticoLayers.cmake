# portico_layer(<target> SEES <part>...)
#
# The layers of src/ (common, bootstrap, wire, transport and each transport, engine, capi) are
# separate libraries, and each compiles against an include root that holds only what it may use:
# a directory of symbolic links to the named parts of src/ (folders, or single headers such as
# transport/transport.hpp), made at configure time. An #include "layer/x.hpp" of anything else
# is then "No such file" at compile time, not a review comment. The table of who sees what is in
# src/CMakeLists.txt (and src/gasnet, src/upc, src/psm2, src/clientkit: clients see only include/,
# the public API, the settings' declarations common/settings.hpp, and at most the header-only
# futex primitives of common/, as src/psm2 does for its lock).
#
# Quoted includes are looked up next to the including file first; every layer includes by
# "layer/file.hpp" from the root, so that finds nothing outside the file's own folder.
function(portico_layer target)
  cmake_parse_arguments(L "" "" "SEES" ${ARGN})
  set(view "${CMAKE_BINARY_DIR}/layer-views/${target}")
  file(REMOVE_RECURSE "${view}")
  foreach(part IN LISTS L_SEES)
    if(NOT EXISTS "${PROJECT_SOURCE_DIR}/src/${part}")
      message(FATAL_ERROR "portico_layer(${target}): src/${part} does not exist")
    endif()
    get_filename_component(parent "${view}/${part}" DIRECTORY)
    file(MAKE_DIRECTORY "${parent}")
    file(CREATE_LINK "${PROJECT_SOURCE_DIR}/src/${part}" "${view}/${part}" SYMBOLIC)
  endforeach()
  target_include_directories(${target} PRIVATE "${view}" "${PROJECT_SOURCE_DIR}/include")
endfunction()
