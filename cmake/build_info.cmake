# SPDX-License-Identifier: Apache-2.0
# Writes OUT, the C header that says which source a binary was built from:
# the commit (12 hex digits, "-dirty" when tracked files differ from it, or
# "unknown" outside a git checkout, as in a release tarball) and the build
# date (UTC, from SOURCE_DATE_EPOCH when set, so that reproducible builds
# get the same bytes). Run with `cmake -P` at every build; the header is
# rewritten only when a value changed, so an unchanged tree rebuilds
# nothing.
#
#   cmake -DSRC=<source dir> -DOUT=<header> [-DCOMMIT=<id>] -P build_info.cmake
#
# COMMIT, when given (-DOIDC_BUILD_COMMIT=... at configure time), is taken
# as it is: for a build from a tarball or a container context without .git.

if(NOT DEFINED SRC OR NOT DEFINED OUT)
  message(FATAL_ERROR "build_info.cmake: set SRC and OUT")
endif()

if(NOT COMMIT)
  set(COMMIT unknown)
  find_program(GIT_COMMAND git)
  if(GIT_COMMAND)
    execute_process(COMMAND ${GIT_COMMAND} -C ${SRC} rev-parse --show-toplevel
                    OUTPUT_VARIABLE top RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    get_filename_component(top "${top}" REALPATH)
    get_filename_component(src "${SRC}" REALPATH)
    # Only SRC's own repository: a tarball unpacked inside another checkout
    # would otherwise claim that checkout's commit.
    if(rc EQUAL 0 AND top STREQUAL src)
      execute_process(COMMAND ${GIT_COMMAND} -C ${SRC} rev-parse --short=12 HEAD
                      OUTPUT_VARIABLE head RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
      # GIT_OPTIONAL_LOCKS=0: a build must not take the index lock from a
      # git command the developer is running.
      execute_process(COMMAND ${CMAKE_COMMAND} -E env GIT_OPTIONAL_LOCKS=0
                              ${GIT_COMMAND} -C ${SRC} status --porcelain --untracked-files=no
                      OUTPUT_VARIABLE changes RESULT_VARIABLE rc2 ERROR_QUIET)
      if(rc EQUAL 0 AND head MATCHES "^[0-9a-f]+$")
        set(COMMIT ${head})
        if(rc2 EQUAL 0 AND NOT changes STREQUAL "")
          set(COMMIT ${head}-dirty)
        endif()
      endif()
    endif()
  endif()
endif()
if(NOT COMMIT MATCHES "^[A-Za-z0-9._+-]+$")
  message(FATAL_ERROR "OIDC_BUILD_COMMIT \"${COMMIT}\": letters, digits and . _ + - only")
endif()

# string(TIMESTAMP) takes SOURCE_DATE_EPOCH from the environment when set.
string(TIMESTAMP DATE "%Y-%m-%d" UTC)

configure_file(${CMAKE_CURRENT_LIST_DIR}/build_info.h.in ${OUT} @ONLY)
