target_sources(profwatch_steplog PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/step_line_parser.cc
  ${CMAKE_CURRENT_LIST_DIR}/log_tailer.cc
  ${CMAKE_CURRENT_LIST_DIR}/step_time_source.cc
)
