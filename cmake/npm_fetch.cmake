# al_npm_fetch(SPEC SHA512 TARBALL): `npm pack SPEC` into TARBALL's folder unless TARBALL is
# there, then checks it against the pinned SHA512 (hex of the digest npm publishes as
# dist.integrity); a tarball that does not match is removed and configuring stops. Nothing
# fetched this way is committed.
function(al_npm_fetch spec sha512 tarball)
    get_filename_component(dir "${tarball}" DIRECTORY)
    if(NOT EXISTS "${tarball}")
        file(MAKE_DIRECTORY "${dir}")
        message(STATUS "Fetching ${spec} with npm pack")
        execute_process(COMMAND npm pack ${spec} --silent --pack-destination "${dir}"
            WORKING_DIRECTORY "${dir}" RESULT_VARIABLE rc OUTPUT_QUIET)
        if(NOT rc EQUAL 0 OR NOT EXISTS "${tarball}")
            message(FATAL_ERROR "npm pack ${spec} failed (rc=${rc}); is npm installed and the npm registry reachable? Run scripts/bootstrap.sh.")
        endif()
    endif()
    file(SHA512 "${tarball}" got)
    if(NOT got STREQUAL sha512)
        file(REMOVE "${tarball}")
        message(FATAL_ERROR "${spec}: integrity mismatch (expected sha512 ${sha512}); the tarball was removed")
    endif()
endfunction()
