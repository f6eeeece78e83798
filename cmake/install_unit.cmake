# Install-time step of cmake/install.cmake: writes the systemd unit with its
# ExecStart, ExecStartPost and Documentation= pointing into CMAKE_INSTALL_PREFIX (the prefix
# of this `cmake --install`), under $DESTDIR when set.
# In: PROFWATCH_UNIT_IN, PROFWATCH_BINDIR, PROFWATCH_DOCDIR (relative dirs).
file(READ "${PROFWATCH_UNIT_IN}" unit_text)
string(REPLACE "=/usr/bin/profwatch "
               "=${CMAKE_INSTALL_PREFIX}/${PROFWATCH_BINDIR}/profwatch " unit_text
               "${unit_text}")
string(REPLACE "Documentation=file:///usr/share/doc/profwatch/"
               "Documentation=file://${CMAKE_INSTALL_PREFIX}/${PROFWATCH_DOCDIR}/" unit_text
               "${unit_text}")
set(unit_dir "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}/lib/systemd/system")
message(STATUS "Installing: ${unit_dir}/profwatch@.service")
file(MAKE_DIRECTORY "${unit_dir}")
file(WRITE "${unit_dir}/profwatch@.service" "${unit_text}")
