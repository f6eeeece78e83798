target_sources(profwatch_figures PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/byte_figures.cc
  ${CMAKE_CURRENT_LIST_DIR}/collective_figures.cc
  ${CMAKE_CURRENT_LIST_DIR}/diagnosis.cc
  ${CMAKE_CURRENT_LIST_DIR}/flop_figures.cc
  ${CMAKE_CURRENT_LIST_DIR}/kernel_label.cc
  ${CMAKE_CURRENT_LIST_DIR}/step_basis.cc
  ${CMAKE_CURRENT_LIST_DIR}/window_figures.cc
)
