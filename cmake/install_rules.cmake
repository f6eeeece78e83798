# Install-time step of cmake/install.cmake (also run alone with -P): writes
# the Prometheus rule files with the default base URL of each alert's
# runbook_url, the one used where the operator's Prometheus sets no external
# label profwatch_runbook_base_url. The repository's rules default to the
# docs of a /usr install (file:///usr/share/doc/profwatch/docs); the
# installed rules to PROFWATCH_RUNBOOK_BASE_URL when it is set (where you
# publish docs/, e.g. https://git.example.com/profwatch/blob/v0.1.0/docs),
# else to the docs this install put under its prefix.
# In: PROFWATCH_RULES_DIR (the repository's rules/), PROFWATCH_DATADIR and
# PROFWATCH_DOCDIR (relative dirs), PROFWATCH_RUNBOOK_BASE_URL (may be empty);
# CMAKE_INSTALL_PREFIX and $DESTDIR as for any install.
# In the rules: {{ with $externalLabels... }}...{{ else }}DEFAULT{{ end }}/FILE.md#anchor
set(repo_default "}}file:///usr/share/doc/profwatch/docs{{ end }}/")
if(PROFWATCH_RUNBOOK_BASE_URL)
  string(REGEX REPLACE "/+$" "" base "${PROFWATCH_RUNBOOK_BASE_URL}")
else()
  set(base "file://${CMAKE_INSTALL_PREFIX}/${PROFWATCH_DOCDIR}/docs")
endif()
set(rules_dir "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}/${PROFWATCH_DATADIR}/profwatch/rules")
file(MAKE_DIRECTORY "${rules_dir}")
file(GLOB rule_files "${PROFWATCH_RULES_DIR}/*.yml")
foreach(f IN LISTS rule_files)
  file(READ "${f}" text)
  string(REPLACE "${repo_default}" "}}${base}{{ end }}/" text "${text}")
  get_filename_component(name "${f}" NAME)
  message(STATUS "Installing: ${rules_dir}/${name} (runbooks by default at ${base})")
  file(WRITE "${rules_dir}/${name}" "${text}")
endforeach()
