target_sources(profwatch_expose PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/snapshot_collectable.cc
  ${CMAKE_CURRENT_LIST_DIR}/exposition.cc
  ${CMAKE_CURRENT_LIST_DIR}/process_collectable.cc
  ${CMAKE_CURRENT_LIST_DIR}/report_table.cc
  ${CMAKE_CURRENT_LIST_DIR}/report_json.cc
  ${CMAKE_CURRENT_LIST_DIR}/compare_report.cc
)
