target_sources(profwatch_read PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/memory_source.cc
  ${CMAKE_CURRENT_LIST_DIR}/file_source.cc
  ${CMAKE_CURRENT_LIST_DIR}/gzip_check.cc
  ${CMAKE_CURRENT_LIST_DIR}/gzip_crc.cc
  ${CMAKE_CURRENT_LIST_DIR}/gzip_source.cc
  ${CMAKE_CURRENT_LIST_DIR}/zlib_inflater.cc
  ${CMAKE_CURRENT_LIST_DIR}/isal_inflater.cc
  ${CMAKE_CURRENT_LIST_DIR}/sniff_source.cc
  ${CMAKE_CURRENT_LIST_DIR}/prefetch_source.cc
)
