# QuickJS 2021-03-27, taken from the npm package qjsc@0.3.0 (deps/quickjs_2021_03_27/).
# Fetched with `npm pack` at configure time, checked against the pinned sha512 (the same digest
# npm publishes as dist.integrity, in hex), extracted and compiled inside the build folder.
# Nothing of it is committed. Only the engine is linked: no quickjs-libc (std/os).
include(${CMAKE_CURRENT_LIST_DIR}/npm_fetch.cmake)
set(QJS_NPM_SPEC "qjsc@0.3.0")
set(QJS_SHA512 "6bbf9c53afc855c65b21e8df7ddb7fc1954c5fa2cbd8c0cbdc743d65be469b6dc6f43bc1312ff3f461c5c73dfd6c0be9d8fbcc38cfb2a52380ca892dd83759db")
set(QJS_DL_DIR "${CMAKE_BINARY_DIR}/_deps")
set(QJS_TARBALL "${QJS_DL_DIR}/qjsc-0.3.0.tgz")
set(QJS_DIR "${QJS_DL_DIR}/quickjs-2021-03-27")

if(NOT EXISTS "${QJS_DIR}/quickjs.c")
    al_npm_fetch(${QJS_NPM_SPEC} ${QJS_SHA512} "${QJS_TARBALL}")
    set(tmp "${QJS_DL_DIR}/extract")
    file(REMOVE_RECURSE "${tmp}")
    file(ARCHIVE_EXTRACT INPUT "${QJS_TARBALL}" DESTINATION "${tmp}"
        PATTERNS "package/deps/quickjs_2021_03_27/*")
    file(REMOVE_RECURSE "${QJS_DIR}")
    file(RENAME "${tmp}/package/deps/quickjs_2021_03_27" "${QJS_DIR}")
    file(REMOVE_RECURSE "${tmp}")
    file(READ "${QJS_DIR}/VERSION" qjs_version)
    string(STRIP "${qjs_version}" qjs_version)
    if(NOT qjs_version STREQUAL "2021-03-27")
        message(FATAL_ERROR "unexpected QuickJS version ${qjs_version} in ${QJS_NPM_SPEC}")
    endif()
endif()

# Column numbers and hooks for the worker: see cmake/quickjs_patch.cmake.
set(QJS_PATCHED "${QJS_DIR}/quickjs_airlock.c")
set(QJS_PATCH_SCRIPT "${CMAKE_CURRENT_LIST_DIR}/quickjs_patch.cmake")
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${QJS_PATCH_SCRIPT}")
if(NOT EXISTS "${QJS_PATCHED}" OR "${QJS_PATCH_SCRIPT}" IS_NEWER_THAN "${QJS_PATCHED}")
    execute_process(COMMAND ${CMAKE_COMMAND} -DQJS_SRC=${QJS_DIR}/quickjs.c
        -DQJS_OUT=${QJS_PATCHED} -P "${QJS_PATCH_SCRIPT}" RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "cannot derive quickjs_airlock.c (see above)")
    endif()
endif()

add_library(quickjs STATIC
    ${QJS_PATCHED} ${QJS_DIR}/libregexp.c ${QJS_DIR}/libunicode.c
    ${QJS_DIR}/cutils.c ${QJS_DIR}/libbf.c)
# Always optimised: the engine's speed is the product's speed, also in debug builds.
target_compile_options(quickjs PRIVATE -O2 -w -fno-strict-aliasing)
target_compile_definitions(quickjs PRIVATE _GNU_SOURCE CONFIG_VERSION="2021-03-27"
    PUBLIC CONFIG_BIGNUM)
target_include_directories(quickjs SYSTEM PUBLIC "${QJS_DIR}")
target_link_libraries(quickjs PUBLIC m Threads::Threads)
