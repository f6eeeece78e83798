target_sources(profwatch_aggregate PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/aggregator.cc
  ${CMAKE_CURRENT_LIST_DIR}/collectives.cc
  ${CMAKE_CURRENT_LIST_DIR}/device_sweep.cc
  ${CMAKE_CURRENT_LIST_DIR}/diagnosis.cc
  ${CMAKE_CURRENT_LIST_DIR}/flops.cc
  ${CMAKE_CURRENT_LIST_DIR}/graph_regions.cc
  ${CMAKE_CURRENT_LIST_DIR}/intervals.cc
  ${CMAKE_CURRENT_LIST_DIR}/interval_spill.cc
  ${CMAKE_CURRENT_LIST_DIR}/name_table.cc
  ${CMAKE_CURRENT_LIST_DIR}/region.cc
  ${CMAKE_CURRENT_LIST_DIR}/window_merge.cc
  ${CMAKE_CURRENT_LIST_DIR}/window_stats.cc
)
