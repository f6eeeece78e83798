target_sources(profwatch_lib PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/state_file.cc
  ${CMAKE_CURRENT_LIST_DIR}/daemon.cc)
target_sources(profwatch_lib PRIVATE ${CMAKE_CURRENT_LIST_DIR}/training_logs.cc ${CMAKE_CURRENT_LIST_DIR}/history.cc)
