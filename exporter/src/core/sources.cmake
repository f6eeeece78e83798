target_sources(profwatch_core PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/budget.cc
  ${CMAKE_CURRENT_LIST_DIR}/caps.cc
  ${CMAKE_CURRENT_LIST_DIR}/result.cc
  ${CMAKE_CURRENT_LIST_DIR}/log.cc
  ${CMAKE_CURRENT_LIST_DIR}/text.cc
  ${CMAKE_CURRENT_LIST_DIR}/work_share.cc
)
