# Installs a test's npm dependencies (pinned exactly) into the build folder: SRC's package.json
# and package-lock.json are copied to DST and `npm ci` installs what the lock names, checking
# every tarball against the lock's sha512 integrity. Skipped when DST already holds an install
# of this very lock (PACKAGE is there), so the tests run offline once fetched. node_modules is
# never committed. Used by tests/e2e (playwright-core) and tests/typescript (typescript).
#   cmake -DSRC=<dir> -DDST=<build dir> -DNPM=<npm> -DPACKAGE=<name> -P cmake/npm_ci.cmake
file(MAKE_DIRECTORY ${DST})
file(SHA256 ${SRC}/package-lock.json want)
set(stamp ${DST}/node_modules/.airlock-lock-sha256)
if(EXISTS ${stamp})
    file(READ ${stamp} have)
    if(have STREQUAL want AND EXISTS ${DST}/node_modules/${PACKAGE}/package.json)
        message(STATUS "${PACKAGE} already installed from this lock")
        return()
    endif()
endif()
file(COPY_FILE ${SRC}/package.json ${DST}/package.json)
file(COPY_FILE ${SRC}/package-lock.json ${DST}/package-lock.json)
execute_process(COMMAND ${NPM} ci --ignore-scripts --no-audit --no-fund --loglevel=error
    WORKING_DIRECTORY ${DST} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
    message(FATAL_ERROR "npm ci of ${SRC} failed (rc=${rc}); is the npm registry reachable? (scripts/bootstrap.sh installs npm)")
endif()
file(WRITE ${stamp} "${want}")
