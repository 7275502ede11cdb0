# Builds the package @airlock/client into DST (the build folder's js/): package.json and
# README.md copied, src/*.ts compiled by tsc (typescript from the build folder, installed by
# npm_ci.cmake) into DST/dist with their .d.ts declarations. Fails when package.json's version
# is not the project's (CMakeLists.txt) or when a module's .js or .d.ts is missing afterwards.
# DST is then an npm package folder: `npm install DST`, or `npm pack` inside it.
#   cmake -DSRC=<js dir> -DDST=<dir> -DNODE=<node> -DTSC=<tsc.js> -DVERSION=<x.y.z> -P build.cmake
file(READ ${SRC}/package.json pkg)
string(JSON have GET "${pkg}" version)
if(NOT have STREQUAL VERSION)
    message(FATAL_ERROR "js/package.json has version ${have}, the project ${VERSION}")
endif()
string(JSON deps ERROR_VARIABLE none GET "${pkg}" dependencies)
if(NOT none)
    message(FATAL_ERROR "js/package.json has dependencies (${deps}): the package has none at run time")
endif()
file(REMOVE_RECURSE ${DST}/dist)
file(MAKE_DIRECTORY ${DST})
file(COPY_FILE ${SRC}/package.json ${DST}/package.json)
file(COPY_FILE ${SRC}/README.md ${DST}/README.md)
execute_process(COMMAND ${NODE} ${TSC} -p ${SRC}/tsconfig.json --outDir ${DST}/dist
    RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
    message(FATAL_ERROR "tsc failed (rc=${rc})")
endif()
file(GLOB sources RELATIVE ${SRC}/src ${SRC}/src/*.ts)
foreach(s ${sources})
    string(REGEX REPLACE "\\.ts$" "" stem ${s})
    foreach(out ${stem}.js ${stem}.d.ts)
        if(NOT EXISTS ${DST}/dist/${out})
            message(FATAL_ERROR "tsc did not emit dist/${out}")
        endif()
    endforeach()
endforeach()
message(STATUS "@airlock/client ${VERSION} built in ${DST}")
