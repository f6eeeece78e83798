# ctest script (cmake -DPROFWATCH=... -DPROFWATCH_SERVE=... -DWORK_DIR=... -P):
# the one-shot CLI must not load the daemon's shared libraries (the split in
# exporter/CMakeLists.txt and cli/main.cc), the daemon binary must, and
# `profwatch serve` without profwatch-serve next to it fails clearly (exit 2).
function(needed_of binary out)
  execute_process(COMMAND readelf --dynamic ${binary} OUTPUT_VARIABLE dyn RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "readelf --dynamic ${binary} exited ${rc}")
  endif()
  string(REGEX MATCHALL "\\(NEEDED\\)[^[]*\\[[^]]+\\]" entries "${dyn}")
  set(${out} "${entries}" PARENT_SCOPE)
endfunction()

needed_of(${PROFWATCH} cli_needed)
needed_of(${PROFWATCH_SERVE} serve_needed)
if(NOT cli_needed MATCHES "libsimdjson")
  message(FATAL_ERROR "readelf parse failed: no libsimdjson in profwatch's NEEDED: ${cli_needed}")
endif()
foreach(lib prometheus-cpp civetweb spdlog fmt)
  if(cli_needed MATCHES "lib${lib}")
    message(FATAL_ERROR "profwatch loads lib${lib}, a daemon-only library: ${cli_needed}")
  endif()
endforeach()
foreach(lib prometheus-cpp-pull prometheus-cpp-core spdlog)
  if(NOT serve_needed MATCHES "lib${lib}")
    message(FATAL_ERROR "profwatch-serve does not load lib${lib}: ${serve_needed}")
  endif()
endforeach()

# A profwatch copied alone: `serve` names the missing daemon binary.
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
file(COPY ${PROFWATCH} DESTINATION ${WORK_DIR})
get_filename_component(name ${PROFWATCH} NAME)
execute_process(COMMAND ${WORK_DIR}/${name} serve --help
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 2 OR NOT err MATCHES "cannot run the daemon ${WORK_DIR}/profwatch-serve: No such file")
  message(FATAL_ERROR "profwatch serve without profwatch-serve: exit ${rc}, stderr '${err}'")
endif()
# Next to it, `serve` is the daemon's own command line.
execute_process(COMMAND ${PROFWATCH} serve --help OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT out MATCHES "Usage: profwatch serve")
  message(FATAL_ERROR "profwatch serve --help: exit ${rc}, stdout '${out}'")
endif()
