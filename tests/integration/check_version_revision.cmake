# ctest script (cmake -DPROFWATCH=... -DSOURCE_DIR=... -P): `profwatch version`
# must name the revision the sources are at now, not the one they were at when
# the build was configured ("unknown" when they are not a git checkout).
execute_process(COMMAND git rev-parse --short=12 HEAD
  WORKING_DIRECTORY ${SOURCE_DIR} OUTPUT_VARIABLE expected
  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT expected MATCHES "^[0-9a-f]+$")
  set(expected "unknown")
endif()
execute_process(COMMAND ${PROFWATCH} version OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "profwatch version exited ${rc}")
endif()
if(NOT out MATCHES "\\(revision ${expected}\\)")
  message(FATAL_ERROR "profwatch version printed '${out}', expected revision ${expected} "
                      "(rebuild after a commit refreshes it)")
endif()
