# `cmake --install` and the Debian package (CPack DEB, scripts/package.sh).
#   bin/rocplay
#   share/man/man1/rocplay.1                      made from `rocplay COMMAND --help` (rocplay_man)
#   share/bash-completion/completions/rocplay     scripts/completion/rocplay.bash
#   share/zsh/site-functions/_rocplay             (share/zsh/vendor-completions under /usr, where
#                                                  Debian's and Ubuntu's zsh look)
#   share/rocplay/playbooks/*.yaml                the built-ins, which are also compiled in
#   share/doc/rocplay/                            README.md and docs/*.md
include(GNUInstallDirs)

set(_man ${CMAKE_CURRENT_BINARY_DIR}/rocplay.1)
add_custom_command(
  OUTPUT ${_man}
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/scripts/manpage.sh $<TARGET_FILE:rocplay>
          ${CMAKE_CURRENT_SOURCE_DIR}/docs/man/rocplay.1.in ${_man}
  DEPENDS rocplay ${CMAKE_CURRENT_SOURCE_DIR}/scripts/manpage.sh
          ${CMAKE_CURRENT_SOURCE_DIR}/docs/man/rocplay.1.in
  COMMENT "Writing the man page rocplay(1) from rocplay's --help")
add_custom_target(rocplay_man ALL DEPENDS ${_man})

install(TARGETS rocplay RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${_man} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES scripts/completion/rocplay.bash DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
        RENAME rocplay)
# zsh: the directory depends on the prefix chosen at install time (/usr, as in the package, whose
# staging prefix CPack makes .../usr: vendor-completions; /usr/local and others: site-functions).
set(_zsh_src ${CMAKE_CURRENT_SOURCE_DIR}/scripts/completion/_rocplay)
install(CODE "
  if(CMAKE_INSTALL_PREFIX MATCHES \"(^|/)usr/*$\")
    set(_rocplay_zsh_dir share/zsh/vendor-completions)
  else()
    set(_rocplay_zsh_dir share/zsh/site-functions)
  endif()
  file(INSTALL DESTINATION \"\${CMAKE_INSTALL_PREFIX}/\${_rocplay_zsh_dir}\" TYPE FILE
       FILES \"${_zsh_src}\")
")
install(FILES ${ROCPLAY_BUILTIN_PLAYBOOKS} DESTINATION ${CMAKE_INSTALL_DATADIR}/rocplay/playbooks)
file(GLOB _rocplay_docs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/docs/*.md)
install(FILES README.md ${_rocplay_docs} DESTINATION ${CMAKE_INSTALL_DOCDIR})

# Tests of what is installed (label "install"; they need the man page, so not part of unit_tests).
if(ROCPLAY_TESTS)
  add_test(NAME "install: the man page covers every command and option of --help"
           COMMAND bash ${PROJECT_SOURCE_DIR}/tests/install/man_check.sh $<TARGET_FILE:rocplay> ${_man})
  add_test(NAME "install: bash and zsh completion"
           COMMAND bash ${PROJECT_SOURCE_DIR}/tests/install/completion_check.sh
                   $<TARGET_FILE_DIR:rocplay> ${PROJECT_SOURCE_DIR}/scripts/completion/rocplay.bash
                   ${PROJECT_SOURCE_DIR}/scripts/completion/_rocplay)
  add_test(NAME "install: cmake --install gives a working rocplay"
           COMMAND bash ${PROJECT_SOURCE_DIR}/tests/install/install_check.sh ${PROJECT_BINARY_DIR}
                   ${PROJECT_SOURCE_DIR})
  set_tests_properties("install: the man page covers every command and option of --help"
                       "install: bash and zsh completion"
                       "install: cmake --install gives a working rocplay"
                       PROPERTIES LABELS install TIMEOUT 120)
endif()

# The Debian package: rocplay_VERSION_amd64.deb. Library dependencies are computed from the
# binary (dpkg-shlibdeps); the debuggers are Suggests, since post-mortems need none and a machine
# has one of rocgdb, cuda-gdb, gdb; libllvm14 only for disassembling AMDGPU code objects; libgvc6
# only for drawing the wait-for graph of `--format html` (opened at run time, as libLLVM is).
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME rocplay)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "rocplay maintainers <rocplay@users.noreply.github.com>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "snapshot a hung GPU process through its debugger and tell which kernel is stuck where")
set(CPACK_PACKAGE_DESCRIPTION
    "rocplay runs rocgdb, cuda-gdb or gdb in GDB/MI mode against a live process, executes YAML
playbooks of debugger steps, always detaches, and runs stuck-kernel heuristics over the
snapshot. Recorded transcripts are analysed offline the same way (postmortem).")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "gdb | rocgdb | cuda-gdb, libllvm14, libgvc6")
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS OFF)
include(CPack)
