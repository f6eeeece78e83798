target_sources(profwatch_web PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/listen_address.cc
  ${CMAKE_CURRENT_LIST_DIR}/base64.cc
  ${CMAKE_CURRENT_LIST_DIR}/web_config.cc
  ${CMAKE_CURRENT_LIST_DIR}/tls.cc
  ${CMAKE_CURRENT_LIST_DIR}/auth_limiter.cc
  ${CMAKE_CURRENT_LIST_DIR}/basic_auth.cc
  ${CMAKE_CURRENT_LIST_DIR}/door.cc
  ${CMAKE_CURRENT_LIST_DIR}/civetweb_compat.cc
  ${CMAKE_CURRENT_LIST_DIR}/pending_connections.cc
  ${CMAKE_CURRENT_LIST_DIR}/http_server.cc
)
# Compiled alone: it defines C library and OpenSSL symbols for civetweb
# (SSL_get_peer_certificate among them), which OpenSSL's headers, included
# by its neighbours in a unity batch, turn into a macro for another name.
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/civetweb_compat.cc PROPERTIES
  SKIP_UNITY_BUILD_INCLUSION ON)
