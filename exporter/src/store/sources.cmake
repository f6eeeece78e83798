target_sources(profwatch_store PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/state_json.cc
  ${CMAKE_CURRENT_LIST_DIR}/state_file.cc
  ${CMAKE_CURRENT_LIST_DIR}/history.cc
  ${CMAKE_CURRENT_LIST_DIR}/inflight_journal.cc
)
