target_sources(profwatch_pipeline PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/daemon.cc
  ${CMAKE_CURRENT_LIST_DIR}/refusals.cc
  ${CMAKE_CURRENT_LIST_DIR}/scan_events.cc
  ${CMAKE_CURRENT_LIST_DIR}/self_metrics.cc
  ${CMAKE_CURRENT_LIST_DIR}/state_restore.cc
  ${CMAKE_CURRENT_LIST_DIR}/training_logs.cc
  ${CMAKE_CURRENT_LIST_DIR}/window_policy.cc
)
