target_sources(profwatch_lib PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/snapshot.cc)
