target_sources(profwatch_drill PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/drill_report.cc
)
