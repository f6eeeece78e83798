target_sources(profwatch_analysis PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/analyze.cc
)
