target_sources(profwatch_lib PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/grouping.cc
  ${CMAKE_CURRENT_LIST_DIR}/assembler.cc)
