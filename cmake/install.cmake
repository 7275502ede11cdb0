# make install (PREFIX, DESTDIR) and make deb (CPack): the programs, the worker in
# libexec/airlock (where libairlock looks for it, src/lib/supervisor.c), libairlock.so with its
# soname and libairlock.a, airlock.h, airlock.pc and the man pages. tests/install/test_install.sh
# installs into a DESTDIR and builds the README's C example against it.
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
include(CPack)
