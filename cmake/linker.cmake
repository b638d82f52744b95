# Linker: LLVM's lld (Debian's package lld, scripts/install-deps.sh) where the compiler can use
# it. The test binaries carry debug line tables for a few hundred objects; GNU ld takes about
# 35 s to link moetune_tests on two cores, lld about 5 s, and a build links 20 programs.
# Off with -DMOETUNE_LLD=OFF (the system's default linker).
option(MOETUNE_LLD "Link with lld when the compiler accepts -fuse-ld=lld" ON)

if(MOETUNE_LLD)
  include(CheckLinkerFlag)
  check_linker_flag(CXX "-fuse-ld=lld" MOETUNE_HAS_LLD)
  if(MOETUNE_HAS_LLD)
    add_link_options(-fuse-ld=lld)
    message(STATUS "moetune: linking with lld")
  else()
    message(STATUS "moetune: no lld, linking with the default linker (scripts/install-deps.sh installs lld)")
  endif()
endif()
