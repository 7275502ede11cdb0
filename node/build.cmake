# Builds the package @airlock/run into DST and packs it into TGZ: the build dependencies
# (typescript, @types/node) by npm ci into DEPS, src/*.ts and the boundary codec of
# @airlock/client (js/src/values.ts, one codec for both packages) compiled by tsc into DST/dist,
# the addon and airlock-worker into DST/prebuilds/linux-x64/, then `npm pack`. Fails when
# package.json's version is not the project's or the package has run-time dependencies.
#   cmake -DSRC= -DVALUES= -DLICENSE= -DDEPS= -DDST= -DTGZ= -DADDON= -DWORKER= -DNODE= -DNPM=
#         -DNPM_CI= -DVERSION= -P build.cmake
file(READ ${SRC}/package.json pkg)
string(JSON have GET "${pkg}" version)
if(NOT have STREQUAL VERSION)
    message(FATAL_ERROR "node/package.json has version ${have}, the project ${VERSION}")
endif()
string(JSON deps ERROR_VARIABLE none GET "${pkg}" dependencies)
if(NOT none)
    message(FATAL_ERROR "node/package.json has dependencies (${deps}): the package has none")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -DSRC=${SRC} -DDST=${DEPS} -DNPM=${NPM}
    -DPACKAGE=typescript -P ${NPM_CI} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
    message(FATAL_ERROR "npm ci of node/ failed")
endif()

# tsc runs in DEPS, where node_modules/@types is.
file(REMOVE_RECURSE ${DEPS}/src ${DST})
file(GLOB sources ${SRC}/src/*.ts)
file(COPY ${sources} ${VALUES} DESTINATION ${DEPS}/src)
file(COPY_FILE ${SRC}/tsconfig.json ${DEPS}/tsconfig.json)
execute_process(COMMAND ${NODE} ${DEPS}/node_modules/typescript/bin/tsc -p ${DEPS}/tsconfig.json
    --outDir ${DST}/dist RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
    message(FATAL_ERROR "tsc failed (rc=${rc})")
endif()

# package.json without the build's devDependencies: what npm installs has none to resolve.
string(JSON pkg REMOVE "${pkg}" devDependencies)
file(WRITE ${DST}/package.json "${pkg}\n")
file(COPY_FILE ${SRC}/README.md ${DST}/README.md)
file(COPY_FILE ${LICENSE} ${DST}/LICENSE)
file(MAKE_DIRECTORY ${DST}/prebuilds/linux-x64)
file(COPY ${ADDON} ${WORKER} DESTINATION ${DST}/prebuilds/linux-x64
    FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ
    WORLD_EXECUTE)

get_filename_component(tgz_dir ${TGZ} DIRECTORY)
file(REMOVE ${TGZ})
execute_process(COMMAND ${NPM} pack ${DST} --silent --pack-destination ${tgz_dir}
    WORKING_DIRECTORY ${tgz_dir} RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0 OR NOT EXISTS ${TGZ})
    message(FATAL_ERROR "npm pack of ${DST} failed (rc=${rc})")
endif()
message(STATUS "@airlock/run ${VERSION}: ${TGZ}")
