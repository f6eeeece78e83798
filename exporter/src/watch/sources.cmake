target_sources(profwatch_watch PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/layout.cc
  ${CMAKE_CURRENT_LIST_DIR}/scanner.cc
  ${CMAKE_CURRENT_LIST_DIR}/shard.cc
  ${CMAKE_CURRENT_LIST_DIR}/poll_watcher.cc
  ${CMAKE_CURRENT_LIST_DIR}/inotify_watcher.cc
)
