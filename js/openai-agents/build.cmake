# Builds @airlock/openai-agents into DST (the build folder's openai-agents/, where setup
# installed its pinned devDependencies): package.json, README.md, tsconfig.json and src/*.ts
# copied (so tsc resolves the SDK's types from DST/node_modules), compiled by that folder's tsc
# into DST/dist with their .d.ts, and the tests copied to DST/test so they import
# @openai/agents from the same node_modules as the package (one SDK instance). Fails when
# package.json's version is not the project's or a module's .js or .d.ts is missing afterwards.
#   cmake -DSRC=<js/openai-agents> -DDST=<dir> -DNODE=<node> -DVERSION=<x.y.z> -P build.cmake
file(READ ${SRC}/package.json pkg)
string(JSON have GET "${pkg}" version)
if(NOT have STREQUAL VERSION)
    message(FATAL_ERROR "js/openai-agents/package.json has version ${have}, the project ${VERSION}")
endif()
file(REMOVE_RECURSE ${DST}/dist ${DST}/src ${DST}/test)
foreach(f package.json README.md tsconfig.json)
    file(COPY_FILE ${SRC}/${f} ${DST}/${f})
endforeach()
file(COPY ${SRC}/src DESTINATION ${DST})
execute_process(COMMAND ${NODE} ${DST}/node_modules/typescript/bin/tsc -p ${DST}/tsconfig.json
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
file(GLOB tests ${SRC}/test/*.mjs)
file(COPY ${tests} DESTINATION ${DST}/test)
message(STATUS "@airlock/openai-agents ${VERSION} built in ${DST}")
