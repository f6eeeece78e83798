# ctest script (cmake -DSRC_DIR=<exporter/src> -P): the figures stage's
# contract (issue #50), checked on the source text so it stays true.
#  1. Renderers compute nothing: no file of expose/, cli/, store/ or web/
#     calls the diagnosis, a Compute*Figures function or the per-GPU-per-step
#     arithmetic of WindowStats; they render figures::WindowFigures
#     (figures/ computes it, once per window and step time).
#  2. The step basis is chosen in one file, figures/step_basis.cc: no other
#     file names a step source ("log", "trace", "config", "kernel span") in
#     an assignment or reads the trace's step markers outside aggregate/ and
#     figures/.
#  3. Every metric name is written once: a "profwatch_..." string literal
#     appears in one file only (expose/metric_names.h, the table), once;
#     code names metrics by their expose::Metric enumerator.
# Comment lines are skipped. Prints every violation (one line each), then
# fails.

cmake_minimum_required(VERSION 3.25)

set(violations 0)
macro(violation text)
  message(STATUS "VIOLATION ${text}")
  math(EXPR violations "${violations} + 1")
endmacro()

# The lines of `file` that are not // comments, as a list. `;` and square
# brackets (list syntax to CMake) become `,` and parentheses first.
function(code_lines file out)
  file(READ ${SRC_DIR}/${file} text)
  string(REPLACE ";" "," text "${text}")
  string(REPLACE "[" "(" text "${text}")
  string(REPLACE "]" ")" text "${text}")
  string(REPLACE "\\" "/" text "${text}")
  string(REPLACE "\n" ";" lines "${text}")
  set(kept "")
  foreach(line IN LISTS lines)
    if(NOT line MATCHES "^[ \t]*//")
      list(APPEND kept "${line}")
    endif()
  endforeach()
  set(${out} "${kept}" PARENT_SCOPE)
endfunction()

file(GLOB_RECURSE files RELATIVE ${SRC_DIR} ${SRC_DIR}/*.h ${SRC_DIR}/*.cc)
list(SORT files)

set(compute_re "(Diagnose|Compute[A-Za-z]*Figures|DominantExposedCollective|PerGpuStepSeconds|PerGpuStepCount|PerStepSeconds|PsToSeconds|Sum[A-Za-z]*Ps|FindStraggler|ComputeBusyQuantiles|TraceStepSeconds)[ \t]*\\(")
set(source_re "(source|basis)[ \t]*=[ \t]*\"(log|trace|config|kernel span)\"")
set(names "")
foreach(file IN LISTS files)
  string(REGEX MATCH "^[^/]+" stage "${file}")
  code_lines(${file} lines)
  foreach(line IN LISTS lines)
    if(stage MATCHES "^(expose|cli|store|web)$" AND line MATCHES "${compute_re}")
      violation("src/${file}: a renderer computes (${CMAKE_MATCH_1}); render figures::WindowFigures: ${line}")
    endif()
    if(NOT file STREQUAL "figures/step_basis.cc")
      if(line MATCHES "${source_re}")
        violation("src/${file}: a step source is chosen outside figures/step_basis.cc: ${line}")
      elseif(NOT stage MATCHES "^(aggregate|figures)$" AND line MATCHES "TraceStepSeconds[ \t]*\\(")
        violation("src/${file}: the trace's step time is read outside figures/step_basis.cc: ${line}")
      endif()
    endif()
    string(REGEX MATCHALL "\"profwatch_[a-z0-9_]*\"" found "${line}")
    foreach(name IN LISTS found)
      list(APPEND names "${name}@${file}")
    endforeach()
  endforeach()
endforeach()

# Each metric name: one file, once.
set(seen "")
foreach(entry IN LISTS names)
  string(REGEX REPLACE "@.*" "" name "${entry}")
  if(name IN_LIST seen)
    continue()
  endif()
  list(APPEND seen ${name})
  set(where "")
  foreach(other IN LISTS names)
    if(other MATCHES "^${name}@(.*)$")
      list(APPEND where ${CMAKE_MATCH_1})
    endif()
  endforeach()
  list(LENGTH where count)
  if(count GREATER 1)
    list(JOIN where ", " places)
    violation("${name} is written ${count} times (${places}); name it by its expose::Metric")
  endif()
endforeach()

if(violations GREATER 0)
  message(FATAL_ERROR "${violations} violation(s) of the figures contract (issue #50)")
endif()
list(LENGTH seen n)
message(STATUS "renderers compute nothing, the step basis is chosen in figures/step_basis.cc, "
               "${n} metric names are each written once")
