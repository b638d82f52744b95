# Two uses of the project's own include graph ("file.h" includes), read when CMake configures:
#   moetune_define_paths  - a macro holding a path of this clone only where it is used;
#   moetune_needed_sources - the library sources a set of files (the fuzz targets) reaches.
# An include resolves beside the including file, else in src/, else in tests/integration/;
# system headers (<...>) are not followed.

# moetune_project_includes(OUT FILE): the project files FILE includes directly (absolute paths),
# read once per configure.
function(moetune_project_includes out file)
  string(MD5 key "${file}")
  get_property(known GLOBAL PROPERTY _moetune_includes_${key} SET)
  if(NOT known)
    get_filename_component(dir "${file}" DIRECTORY)
    file(STRINGS "${file}" lines REGEX "^[ \t]*#[ \t]*include[ \t]+\"")
    set(found "")
    foreach(line IN LISTS lines)
      if(NOT line MATCHES "#[ \t]*include[ \t]+\"([^\"]+)\"")
        continue()
      endif()
      foreach(base "${dir}" "${PROJECT_SOURCE_DIR}/src" "${PROJECT_SOURCE_DIR}/tests/integration")
        if(EXISTS "${base}/${CMAKE_MATCH_1}")
          cmake_path(SET header NORMALIZE "${base}/${CMAKE_MATCH_1}")
          list(APPEND found "${header}")
          break()
        endif()
      endforeach()
    endforeach()
    set_property(GLOBAL PROPERTY _moetune_includes_${key} "${found}")
  endif()
  get_property(result GLOBAL PROPERTY _moetune_includes_${key})
  set(${out} "${result}" PARENT_SCOPE)
endfunction()

# moetune_include_closure(OUT FILE...): FILE... and every project header they include,
# transitively.
function(moetune_include_closure out)
  set(todo ${ARGN})
  set(seen ${ARGN})
  while(todo)
    list(POP_FRONT todo file)
    moetune_project_includes(includes "${file}")
    foreach(header IN LISTS includes)
      if(NOT header IN_LIST seen)
        list(APPEND seen "${header}")
        list(APPEND todo "${header}")
      endif()
    endforeach()
  endwhile()
  set(${out} "${seen}" PARENT_SCOPE)
endfunction()

# moetune_define_paths(TARGET NAME=VALUE ...): defines each macro only in the TARGET's sources
# that use it, themselves or through a project header they include. The values are absolute
# paths of this checkout or build folder (MOETUNE_SOURCE_DIR, test binaries): on every compile
# command they would make the compile commands of two clones differ, and the compiler cache
# (cmake/compiler_cache.cmake) could reuse nothing between them. A source that starts using one
# of these macros compiles after the next configure (`cmake build`; a new file reconfigures).
function(moetune_define_paths target)
  get_target_property(sources ${target} SOURCES)
  get_target_property(source_dir ${target} SOURCE_DIR)
  foreach(definition IN LISTS ARGN)
    string(REGEX REPLACE "=.*$" "" name "${definition}")
    set(users "")
    foreach(source IN LISTS sources)
      if(source MATCHES "^\\$<")  # a generator expression, no file to read
        continue()
      endif()
      cmake_path(ABSOLUTE_PATH source BASE_DIRECTORY "${source_dir}" NORMALIZE)
      moetune_include_closure(files "${source}")
      foreach(file IN LISTS files)
        string(MD5 key "${name}:${file}")
        get_property(known GLOBAL PROPERTY _moetune_uses_${key} SET)
        if(NOT known)
          # Lines that are // comments do not count.
          file(STRINGS "${file}" hits LIMIT_COUNT 1
            REGEX "^[ \t]*([^/ \t]|/[^/]).*${name}|^[ \t]*${name}")
          set_property(GLOBAL PROPERTY _moetune_uses_${key} "${hits}")
        endif()
        get_property(hits GLOBAL PROPERTY _moetune_uses_${key})
        if(hits)
          list(APPEND users "${source}")
          break()
        endif()
      endforeach()
    endforeach()
    if(users)
      set_property(SOURCE ${users} TARGET_DIRECTORY ${target} APPEND PROPERTY
        COMPILE_DEFINITIONS "${definition}")
    endif()
  endforeach()
endfunction()

# moetune_needed_sources(OUT CANDIDATES ROOT...): the CANDIDATES (a list variable of library
# sources) that the ROOT files need: every header they include brings the name.cc beside it
# (and name_PART.cc, where one class is split across files, e.g. reserve_graph_builder_blocks.cc),
# and what those sources include brings more, transitively. This relies on the project's rule
# that what a header declares is defined in the .cc of the same name (or its parts); a
# definition found elsewhere would be a link error that names the symbol.
function(moetune_needed_sources out candidates)
  set(todo ${ARGN})
  set(seen ${ARGN})
  set(needed "")
  while(todo)
    list(POP_FRONT todo file)
    moetune_project_includes(includes "${file}")
    foreach(header IN LISTS includes)
      if(header IN_LIST seen)
        continue()
      endif()
      list(APPEND seen "${header}")
      list(APPEND todo "${header}")
      if(NOT header MATCHES "\\.h$")
        continue()
      endif()
      string(REGEX REPLACE "\\.h$" "" stem "${header}")
      # A part has no header of its own (foo_bar.cc beside foo_bar.h is a unit of its own).
      file(GLOB candidates_beside "${stem}_*.cc")
      set(parts "")
      foreach(part IN LISTS candidates_beside)
        string(REGEX REPLACE "\\.cc$" ".h" part_header "${part}")
        if(NOT part MATCHES "_test\\.cc$" AND NOT EXISTS "${part_header}")
          list(APPEND parts "${part}")
        endif()
      endforeach()
      foreach(source "${stem}.cc" ${parts})
        if(EXISTS "${source}" AND NOT source IN_LIST seen)
          list(APPEND seen "${source}")
          list(APPEND todo "${source}")
          list(APPEND needed "${source}")
        endif()
      endforeach()
    endforeach()
  endwhile()
  set(result "")
  foreach(source IN LISTS ${candidates})
    if(source IN_LIST needed)
      list(APPEND result "${source}")
    endif()
  endforeach()
  set(${out} "${result}" PARENT_SCOPE)
endfunction()
