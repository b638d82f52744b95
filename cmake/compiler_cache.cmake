# Compiler cache: every compile goes through ccache (Debian's package, scripts/install-deps.sh)
# with its cache outside the build folder and the clone, so a second clone on the same machine
# (CI clones afresh for every run) reuses the objects of the first, while a fresh machine
# builds everything. Where: $CCACHE_DIR if set, else ${XDG_CACHE_HOME:-~/.cache}/moetune/ccache.
#  - CCACHE_BASEDIR is this checkout: paths inside it are hashed relative to the build folder,
#    so clones at different paths share objects (build folders at the same place in each,
#    e.g. build/ and build-fuzz/).
#  - CCACHE_NOHASHDIR: the build folder's absolute path is not hashed either; the price is that
#    the debug information of an object made in another clone names that clone's paths.
# Off with -DMOETUNE_CCACHE=OFF; a CMAKE_<LANG>_COMPILER_LAUNCHER given on the command line wins.
option(MOETUNE_CCACHE "Compile through ccache, with its cache outside the build folder" ON)

if(MOETUNE_CCACHE)
  find_program(MOETUNE_CCACHE_PROGRAM ccache)
  find_program(MOETUNE_ENV_PROGRAM env)
  if(DEFINED ENV{CCACHE_DIR} AND NOT "$ENV{CCACHE_DIR}" STREQUAL "")
    set(_moetune_ccache_dir "$ENV{CCACHE_DIR}")
  elseif(DEFINED ENV{XDG_CACHE_HOME} AND NOT "$ENV{XDG_CACHE_HOME}" STREQUAL "")
    set(_moetune_ccache_dir "$ENV{XDG_CACHE_HOME}/moetune/ccache")
  else()
    set(_moetune_ccache_dir "$ENV{HOME}/.cache/moetune/ccache")
  endif()
  set(MOETUNE_CCACHE_DIR "${_moetune_ccache_dir}" CACHE PATH
    "ccache's cache (default: \$CCACHE_DIR, else \${XDG_CACHE_HOME:-~/.cache}/moetune/ccache)")
  if(MOETUNE_CCACHE_PROGRAM AND MOETUNE_ENV_PROGRAM)
    set(_moetune_launcher ${MOETUNE_ENV_PROGRAM} "CCACHE_DIR=${MOETUNE_CCACHE_DIR}"
      "CCACHE_BASEDIR=${PROJECT_SOURCE_DIR}" CCACHE_NOHASHDIR=true ${MOETUNE_CCACHE_PROGRAM})
    foreach(lang C CXX)
      if(NOT CMAKE_${lang}_COMPILER_LAUNCHER)
        set(CMAKE_${lang}_COMPILER_LAUNCHER ${_moetune_launcher})
      endif()
    endforeach()
    message(STATUS "moetune: compiler cache ${MOETUNE_CCACHE_DIR}")
  else()
    message(STATUS "moetune: no ccache, compiling without a cache (scripts/install-deps.sh installs it)")
  endif()
endif()
