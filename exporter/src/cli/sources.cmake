target_sources(profwatch_lib PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/cli_util.cc
  ${CMAKE_CURRENT_LIST_DIR}/analyze_inputs.cc
  ${CMAKE_CURRENT_LIST_DIR}/cmd_analyze.cc
  ${CMAKE_CURRENT_LIST_DIR}/cmd_compare.cc
)
