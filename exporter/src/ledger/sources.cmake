target_sources(profwatch_ledger PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/ledger.cc
)
