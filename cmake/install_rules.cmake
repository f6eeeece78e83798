# Install-time step of cmake/install.cmake (also run alone with -P): writes
# the Prometheus rule files. Each alert's runbook_url links, where the
# operator's Prometheus sets no external label profwatch_runbook_base_url,
# the runbook a profwatch daemon serves (http://<a profwatch target>/runbook,
# rules/profwatch.rules.yml says how the target is found); the rules are
# installed so unless PROFWATCH_RUNBOOK_BASE_URL is set (where you publish
# docs/, e.g. https://git.example.com/profwatch/blob/v0.1.0/docs): then that
# default becomes <base>/alerts-and-dashboards.md.
# In: PROFWATCH_RULES_DIR (the repository's rules/), PROFWATCH_DATADIR
# (relative dir), PROFWATCH_RUNBOOK_BASE_URL (may be empty);
# CMAKE_INSTALL_PREFIX and $DESTDIR as for any install.
# In the rules (folded YAML: its line breaks fall inside `{{ ... }}`):
#   {{ with $externalLabels... }}...md{{ else }}http://{{ with query ...
#   ... }}/runbook{{ end }}#anchor
# The text from `{{ else }}http://` to `/runbook{{ end }}` is replaced; a
# rule file in which some link lacks it fails the install rather than keep
# the daemon default silently.
set(daemon_default_re "{{ else }}http://{{ with query [^#]*/runbook{{ end }}#")
set(rules_dir "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}/${PROFWATCH_DATADIR}/profwatch/rules")
file(MAKE_DIRECTORY "${rules_dir}")
file(GLOB rule_files "${PROFWATCH_RULES_DIR}/*.yml")
if(PROFWATCH_RUNBOOK_BASE_URL)
  string(REGEX REPLACE "/+$" "" base "${PROFWATCH_RUNBOOK_BASE_URL}")
  set(where "${base}/alerts-and-dashboards.md")
else()
  set(where "a profwatch daemon's /runbook")
endif()
foreach(f IN LISTS rule_files)
  file(READ "${f}" text)
  if(PROFWATCH_RUNBOOK_BASE_URL)
    string(REGEX MATCHALL "runbook_url: >-" links "${text}")
    string(REGEX MATCHALL "${daemon_default_re}" defaults "${text}")
    list(LENGTH links n_links)
    list(LENGTH defaults n_defaults)
    if(NOT n_links EQUAL n_defaults)
      message(FATAL_ERROR "${f}: ${n_defaults} of ${n_links} runbook_url links have the daemon "
                          "default cmake/install_rules.cmake replaces")
    endif()
    string(REGEX REPLACE "${daemon_default_re}" "{{ else }}${base}/alerts-and-dashboards.md{{ end }}#"
                         text "${text}")
  endif()
  get_filename_component(name "${f}" NAME)
  message(STATUS "Installing: ${rules_dir}/${name} (runbooks by default at ${where})")
  file(WRITE "${rules_dir}/${name}" "${text}")
endforeach()
