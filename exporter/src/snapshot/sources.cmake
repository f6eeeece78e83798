target_sources(profwatch_snapshot PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/snapshot.cc
)
