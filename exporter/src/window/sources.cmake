target_sources(profwatch_window PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/grouping.cc
  ${CMAKE_CURRENT_LIST_DIR}/assembler.cc
  ${CMAKE_CURRENT_LIST_DIR}/fair_queue.cc
)
