# Script mode (cmake -P), run on every build by the kvrt_git_commit target:
# writes OUTPUT, a header defining KVRT_GIT_COMMIT as `git rev-parse --short=12 HEAD`
# of SOURCE_DIR (with "-dirty" when tracked files differ from it, "unknown" outside
# git or without GIT), and rewrites it only when that text changes, so an unchanged
# commit recompiles nothing.
#   -DSOURCE_DIR=<checkout> -DOUTPUT=<header> [-DGIT=<git executable>]
set(commit "unknown")
if(GIT)
  execute_process(COMMAND "${GIT}" rev-parse --short=12 HEAD
                  WORKING_DIRECTORY "${SOURCE_DIR}"
                  OUTPUT_VARIABLE head OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE head_status ERROR_QUIET)
  if(head_status EQUAL 0 AND head)
    set(commit "${head}")
    # Exit status 1: the tracked files differ from HEAD (untracked files do not count).
    execute_process(COMMAND "${GIT}" diff --quiet HEAD --
                    WORKING_DIRECTORY "${SOURCE_DIR}"
                    RESULT_VARIABLE diff_status OUTPUT_QUIET ERROR_QUIET)
    if(diff_status EQUAL 1)
      string(APPEND commit "-dirty")
    endif()
  endif()
endif()
set(text "// Generated at build time by cmake/WriteGitCommit.cmake.\n#pragma once\n\n#define KVRT_GIT_COMMIT \"${commit}\"\n")
set(old "")
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUTPUT}" "${text}")
endif()
