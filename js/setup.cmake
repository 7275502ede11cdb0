# js.setup: the npm dependencies of the package (typescript) and of the OpenAI Agents example
# (@openai/agents, zod) into the build folder, each by cmake/npm_ci.cmake (`npm ci` of its lock,
# skipped once that very lock is installed).
#   cmake -DNPM=<npm> -DNPM_CI=<npm_ci.cmake> -DJS_SRC= -DJS_DST= -DEX_SRC= -DEX_DST= -P setup.cmake
foreach(which JS EX)
    if(which STREQUAL JS)
        set(package typescript)
    else()
        set(package @openai/agents)
    endif()
    execute_process(COMMAND ${CMAKE_COMMAND} -DSRC=${${which}_SRC} -DDST=${${which}_DST}
        -DNPM=${NPM} -DPACKAGE=${package} -P ${NPM_CI} RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "npm ci of ${${which}_SRC} failed")
    endif()
endforeach()
