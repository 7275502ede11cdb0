# make install (PREFIX, DESTDIR) and make deb (CPack): the programs, the worker in
# libexec/airlock (where libairlock looks for it, src/lib/supervisor.c), libairlock.so with its
# soname and libairlock.a, airlock.h, airlock.pc and the man pages; airlockd's systemd unit and
# config file (packaging/). tests/install/test_install.sh installs into a DESTDIR and builds the
# README's C example against it; tests/install/test_service.sh starts airlockd from the package
# as its unit does.
include(GNUInstallDirs)
# cpack (install.destdir runs it beside other tests) must not rebuild the tree under them
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY TRUE)

install(TARGETS airlock_cli airlockd RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS airlock-worker RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/airlock)
install(TARGETS airlock LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} NAMELINK_COMPONENT Unspecified)
install(TARGETS airlock_static ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES ${PROJECT_SOURCE_DIR}/include/airlock.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

configure_file(${PROJECT_SOURCE_DIR}/cmake/airlock.pc.in ${PROJECT_BINARY_DIR}/airlock.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/airlock.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The man pages carry the version of this one place.
set(AIRLOCK_VERSION ${PROJECT_VERSION})
foreach(page airlock.1 airlockd.8 libairlock.3)
    configure_file(${PROJECT_SOURCE_DIR}/docs/man/${page} ${PROJECT_BINARY_DIR}/man/${page} @ONLY)
    string(REGEX REPLACE ".*\\.([0-9])$" "\\1" section ${page})
    install(FILES ${PROJECT_BINARY_DIR}/man/${page}
        DESTINATION ${CMAKE_INSTALL_MANDIR}/man${section})
endforeach()
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE ${PROJECT_SOURCE_DIR}/CHANGELOG.md
    DESTINATION ${CMAKE_INSTALL_DOCDIR})

# airlockd as a service: the unit in systemd's directory of the prefix (/lib/systemd/system for
# /usr, Debian's; PREFIX/lib/systemd/system otherwise, which systemd also reads), the config in
# SYSCONFDIR/airlock (/etc/airlock for /usr), a conffile of the package. The maintainer scripts
# create the user airlock and its state directory.
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
    set(AIRLOCK_UNIT_DIR /lib/systemd/system)
else()
    set(AIRLOCK_UNIT_DIR ${CMAKE_INSTALL_PREFIX}/lib/systemd/system)
endif()
set(AIRLOCK_BINDIR ${CMAKE_INSTALL_FULL_BINDIR})
set(AIRLOCK_CONFIG_FILE ${CMAKE_INSTALL_FULL_SYSCONFDIR}/airlock/airlockd.json)
configure_file(${PROJECT_SOURCE_DIR}/packaging/airlockd.service.in
    ${PROJECT_BINARY_DIR}/packaging/airlockd.service @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/packaging/airlockd.service DESTINATION ${AIRLOCK_UNIT_DIR})
install(FILES ${PROJECT_SOURCE_DIR}/packaging/airlockd.json
    DESTINATION ${CMAKE_INSTALL_FULL_SYSCONFDIR}/airlock)
foreach(script postinst prerm postrm conffiles)
    configure_file(${PROJECT_SOURCE_DIR}/packaging/${script}
        ${PROJECT_BINARY_DIR}/packaging/debian/${script} @ONLY)
    list(APPEND AIRLOCK_DEB_CONTROL ${PROJECT_BINARY_DIR}/packaging/debian/${script})
endforeach()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME airlock)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "Run untrusted JavaScript and TypeScript in a jailed QuickJS worker, governed by airlockd")
set(CPACK_PACKAGE_CONTACT "airlock maintainers <airlock@localhost>")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
# the package holds the tree `make install` would write (make deb configures PREFIX=/usr)
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
# the maintainer scripts (executable in the package) and the conffile list
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${AIRLOCK_DEB_CONTROL})
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
# useradd (postinst), beside the libraries found by shlibdeps
set(CPACK_DEBIAN_PACKAGE_DEPENDS "passwd")
include(CPack)
