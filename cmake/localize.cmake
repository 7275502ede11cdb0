# Rewrites a static archive so that only its default-visibility (AL_API) symbols stay global,
# as the shared library's version script does for libairlock.so:
#
#   cmake -DAR=ar -DLD=ld -DOBJCOPY=objcopy -DARCHIVE=libairlock.a -P cmake/localize.cmake
#
# Every member is linked into one relocatable object (ld -r), which resolves the references
# between them; objcopy --localize-hidden then turns every hidden symbol (all of them but the
# AL_API ones, the sources being compiled with -fvisibility=hidden) into a local one, and the
# archive is rebuilt from that one object. An application linking libairlock.a can then define
# its own buf_init or json_parse without a clash.
foreach(v AR LD OBJCOPY ARCHIVE)
    if(NOT ${v})
        message(FATAL_ERROR "localize.cmake: ${v} is not set")
    endif()
endforeach()
get_filename_component(name ${ARCHIVE} NAME_WE)
set(work ${ARCHIVE}.localize)
file(REMOVE_RECURSE ${work})
file(MAKE_DIRECTORY ${work})
set(obj ${work}/${name}.o)
macro(run)
    execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc ERROR_VARIABLE err WORKING_DIRECTORY ${work})
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "localize.cmake: ${ARGN} failed:\n${err}")
    endif()
endmacro()
run(${LD} -r --whole-archive ${ARCHIVE} -o ${obj})
run(${OBJCOPY} --localize-hidden ${obj})
file(REMOVE ${ARCHIVE})
run(${AR} rcs ${ARCHIVE} ${obj})
file(REMOVE_RECURSE ${work})
