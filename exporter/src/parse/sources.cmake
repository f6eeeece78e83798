target_sources(profwatch_parse PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/decode_pipeline.cc
  ${CMAKE_CURRENT_LIST_DIR}/event_decoder.cc
  ${CMAKE_CURRENT_LIST_DIR}/hlo_schedule.cc
  ${CMAKE_CURRENT_LIST_DIR}/json_trace_parser.cc
  ${CMAKE_CURRENT_LIST_DIR}/nsys_reader.cc
  ${CMAKE_CURRENT_LIST_DIR}/number.cc
  ${CMAKE_CURRENT_LIST_DIR}/op_shapes.cc
  ${CMAKE_CURRENT_LIST_DIR}/rocpd_reader.cc
  ${CMAKE_CURRENT_LIST_DIR}/rocprof_reader.cc
  ${CMAKE_CURRENT_LIST_DIR}/sniff.cc
  ${CMAKE_CURRENT_LIST_DIR}/sqlite_file.cc
  ${CMAKE_CURRENT_LIST_DIR}/trace_event.cc
  ${CMAKE_CURRENT_LIST_DIR}/xplane_parser.cc
)
