# ctest script (cmake -DPROFWATCH=... -DWORK_DIR=... -P): profwatch is one
# program. A copy of the binary alone in an empty directory runs every verb
# itself (nothing beside it to exec), and --version works on every verb.
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
file(COPY ${PROFWATCH} DESTINATION ${WORK_DIR})
get_filename_component(name ${PROFWATCH} NAME)
set(alone ${WORK_DIR}/${name})
file(GLOB beside RELATIVE ${WORK_DIR} ${WORK_DIR}/*)
if(NOT beside STREQUAL name)
  message(FATAL_ERROR "work dir holds more than the binary: ${beside}")
endif()

execute_process(COMMAND ${alone} serve --help
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT out MATCHES "--watch" OR NOT out MATCHES "--listen")
  message(FATAL_ERROR "profwatch serve --help alone: exit ${rc}, stdout '${out}', stderr '${err}'")
endif()

foreach(verb version --version "serve --version" "analyze --version" "compare --version")
  separate_arguments(argv UNIX_COMMAND "${verb}")
  execute_process(COMMAND ${alone} ${argv}
    OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "^profwatch [0-9]+\\.[0-9]+\\.[0-9]+ \\(revision ")
    message(FATAL_ERROR "profwatch ${verb}: exit ${rc}, stdout '${out}', stderr '${err}'")
  endif()
endforeach()
