# Install-time step of cmake/install.cmake (also run alone with -P): writes
# the Prometheus rule files with each alert's runbook_url under the base URL
# of the docs. The repository's rules link the docs of a /usr install
# (file:///usr/share/doc/profwatch/docs/...); the installed rules link
# PROFWATCH_RUNBOOK_BASE_URL when it is set (where you publish docs/, e.g.
# https://git.example.com/profwatch/blob/v0.1.0/docs), else the docs this
# install put under its prefix.
# In: PROFWATCH_RULES_DIR (the repository's rules/), PROFWATCH_DATADIR and
# PROFWATCH_DOCDIR (relative dirs), PROFWATCH_RUNBOOK_BASE_URL (may be empty);
# CMAKE_INSTALL_PREFIX and $DESTDIR as for any install.
set(repo_base "file:///usr/share/doc/profwatch/docs/")
if(PROFWATCH_RUNBOOK_BASE_URL)
  string(REGEX REPLACE "/+$" "" base "${PROFWATCH_RUNBOOK_BASE_URL}")
  set(base "${base}/")
else()
  set(base "file://${CMAKE_INSTALL_PREFIX}/${PROFWATCH_DOCDIR}/docs/")
endif()
set(rules_dir "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}/${PROFWATCH_DATADIR}/profwatch/rules")
file(MAKE_DIRECTORY "${rules_dir}")
file(GLOB rule_files "${PROFWATCH_RULES_DIR}/*.yml")
foreach(f IN LISTS rule_files)
  file(READ "${f}" text)
  string(REPLACE "runbook_url: \"${repo_base}" "runbook_url: \"${base}" text "${text}")
  get_filename_component(name "${f}" NAME)
  message(STATUS "Installing: ${rules_dir}/${name} (runbooks at ${base})")
  file(WRITE "${rules_dir}/${name}" "${text}")
endforeach()
