# moetune_define_paths(TARGET NAME=VALUE ...): defines each macro only in the TARGET's sources
# that mention NAME. The values are absolute paths of this checkout or build folder
# (MOETUNE_SOURCE_DIR, test binaries): on every compile command they would make all compile
# commands differ between two clones, and the compiler cache could reuse nothing across them.
# The sources are read when CMake configures: a source that starts using one of these macros
# compiles after the next configure (`cmake build`, or any new file, which CMake's globs see).
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
      file(STRINGS "${source}" hits REGEX "${name}" LIMIT_COUNT 1)
      if(hits)
        list(APPEND users "${source}")
      endif()
    endforeach()
    if(users)
      set_property(SOURCE ${users} TARGET_DIRECTORY ${target} APPEND PROPERTY
        COMPILE_DEFINITIONS "${definition}")
    endif()
  endforeach()
endfunction()
