target_sources(profwatch_classify PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/classifier.cc
  ${CMAKE_CURRENT_LIST_DIR}/builtin_rules.cc
  ${CMAKE_CURRENT_LIST_DIR}/rules_file.cc
)
