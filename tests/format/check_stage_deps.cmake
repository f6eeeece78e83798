# ctest script (cmake -DSTAGES=<stages.cmake> -DSRC_DIR=<src> -P): every
# `#include "<stage>/..."` in SRC_DIR/<stage>/ must name the stage itself or a
# stage it may use (its DEPS in STAGES, and theirs in turn), and every
# third-party header must belong to a library in the LIBS of those stages.
# Link order alone misses a header-only or inline use against the data flow;
# this check does not. Prints every violation (one line each), then fails.

cmake_minimum_required(VERSION 3.25)

# Third-party include prefix -> the LIBS entry that provides it.
set(header_libs
  "simdjson.h=simdjson::simdjson"
  "prometheus/=prometheus-cpp::core"
  "CLI/=CLI11::CLI11"
  "yaml-cpp/=yaml-cpp"
  "nlohmann/=nlohmann_json::nlohmann_json"
  "spdlog/=spdlog::spdlog"
  "zlib.h=ZLIB::ZLIB"
  "isa-l/=profwatch_isal"
  "civetweb.h=civetweb::civetweb"
  "CivetServer.h=civetweb::civetweb-cpp"
  "openssl/=OpenSSL::SSL"
  "crypt.h=crypt")
# stages.cmake names libcrypt by the variable the build's find_library sets.
set(CRYPT_LIBRARY crypt)

# Read the stage table: the same file the build reads.
set(stages "")
function(profwatch_stage stage)
  cmake_parse_arguments(PARSE_ARGV 1 arg "OPTIONAL" "" "DEPS;LIBS")
  set(closure ${stage})
  set(libs ${arg_LIBS})
  foreach(dep IN LISTS arg_DEPS)
    if(NOT dep IN_LIST stages)
      message(FATAL_ERROR "stages.cmake: ${stage} uses ${dep}, which is not declared above it")
    endif()
    list(APPEND closure ${closure_${dep}})
    list(APPEND libs ${libs_${dep}})
  endforeach()
  list(REMOVE_DUPLICATES closure)
  set(closure_${stage} ${closure} PARENT_SCOPE)
  set(libs_${stage} ${libs} PARENT_SCOPE)
  set(stages ${stages} ${stage} PARENT_SCOPE)
endfunction()
include(${STAGES})

set(violations 0)
file(GLOB dirs LIST_DIRECTORIES true RELATIVE ${SRC_DIR} ${SRC_DIR}/*)
foreach(stage IN LISTS dirs)
  if(NOT IS_DIRECTORY ${SRC_DIR}/${stage})
    continue()
  endif()
  if(NOT stage IN_LIST stages)
    message(STATUS "VIOLATION src/${stage}/ is not a stage in stages.cmake")
    math(EXPR violations "${violations} + 1")
    continue()
  endif()
  file(GLOB_RECURSE files RELATIVE ${SRC_DIR} ${SRC_DIR}/${stage}/*.h ${SRC_DIR}/${stage}/*.cc)
  list(SORT files)
  foreach(file IN LISTS files)
    file(STRINGS ${SRC_DIR}/${file} includes REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<]")
    foreach(line IN LISTS includes)
      if(line MATCHES "include[ \t]*\"([A-Za-z0-9_]+)/")
        set(used ${CMAKE_MATCH_1})
        if(used IN_LIST stages AND NOT used IN_LIST closure_${stage})
          message(STATUS "VIOLATION src/${file}: ${stage} may not include ${used}/ "
                         "(allowed: ${closure_${stage}}): ${line}")
          math(EXPR violations "${violations} + 1")
        endif()
      elseif(line MATCHES "include[ \t]*<([^>]+)>")
        set(header ${CMAKE_MATCH_1})
        foreach(entry IN LISTS header_libs)
          string(REPLACE "=" ";" pair ${entry})
          list(GET pair 0 prefix)
          list(GET pair 1 lib)
          string(FIND "${header}" "${prefix}" at)
          if(at EQUAL 0 AND NOT lib IN_LIST libs_${stage})
            message(STATUS "VIOLATION src/${file}: ${stage} uses ${lib} (<${header}>), "
                           "which is not in the LIBS of ${stage} or of a stage it uses")
            math(EXPR violations "${violations} + 1")
          endif()
        endforeach()
      endif()
    endforeach()
  endforeach()
endforeach()
if(violations GREATER 0)
  message(FATAL_ERROR "${violations} include(s) against the stage order (exporter/stages.cmake)")
endif()
message(STATUS "stage includes follow exporter/stages.cmake (${stages})")
