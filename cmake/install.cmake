# What `cmake --install` puts where, so the deploy files and the install agree:
#   ${BINDIR}/profwatch                         (exporter/CMakeLists.txt)
#   lib/systemd/system/profwatch@.service       the unit, its ExecStart and
#                                               Documentation= rewritten to this
#                                               prefix's binary and docs
#   ${DATADIR}/profwatch/rules/*.yml            Prometheus rules; each alert's
#                                               runbook_url links a daemon's
#                                               /runbook, or the docs at
#                                               PROFWATCH_RUNBOOK_BASE_URL
#   ${DATADIR}/profwatch/dashboards/*.json      Grafana dashboards
#   ${DOCDIR}/README.md, ${DOCDIR}/docs/*.md    the manual and the docs
#   ${DOCDIR}/examples/profwatch.env.example    the unit's environment file
#   ${DATADIR}/profwatch/demo/                  the demo job directory `serve`
#                                               uses without --watch
#                                               (tools/tracegen/CMakeLists.txt)
# The repository's unit names /usr/bin and /usr/share/doc/profwatch (a
# distribution install); the installed copy names wherever this prefix put
# the files, so `systemctl enable profwatch@NAME` runs what was installed.
include(GNUInstallDirs)

# The unit is written at install time, from the prefix given then
# (`cmake --install build --prefix /usr` differs from the configured one).
install(CODE "
  set(PROFWATCH_UNIT_IN \"${CMAKE_SOURCE_DIR}/deploy/systemd/profwatch@.service\")
  set(PROFWATCH_BINDIR \"${CMAKE_INSTALL_BINDIR}\")
  set(PROFWATCH_DOCDIR \"${CMAKE_INSTALL_DOCDIR}\")
  include(\"${CMAKE_SOURCE_DIR}/cmake/install_unit.cmake\")")
install(FILES ${CMAKE_SOURCE_DIR}/deploy/systemd/profwatch.env.example
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)
# Where alerts' runbook_url links point by default: the base URL of the
# published docs/ (empty: the /runbook page of a profwatch daemon).
set(PROFWATCH_RUNBOOK_BASE_URL "" CACHE STRING
    "Base URL of the docs/ pages the installed alerts' runbook_url link to (empty: a daemon's /runbook)")
install(CODE "
  set(PROFWATCH_RULES_DIR \"${CMAKE_SOURCE_DIR}/rules\")
  set(PROFWATCH_DATADIR \"${CMAKE_INSTALL_DATADIR}\")
  set(PROFWATCH_RUNBOOK_BASE_URL \"${PROFWATCH_RUNBOOK_BASE_URL}\")
  include(\"${CMAKE_SOURCE_DIR}/cmake/install_rules.cmake\")")
install(DIRECTORY ${CMAKE_SOURCE_DIR}/dashboards/
        DESTINATION ${CMAKE_INSTALL_DATADIR}/profwatch/dashboards FILES_MATCHING PATTERN "*.json")
install(FILES ${CMAKE_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs
        FILES_MATCHING PATTERN "*.md")
