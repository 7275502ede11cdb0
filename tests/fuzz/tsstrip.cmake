# fuzz.tsstrip: libFuzzer over the TypeScript stripper (tests/fuzz/fuzz_tsstrip.c), built with
# clang directly like fuzz.continuation (see tests/fuzz/CMakeLists.txt for why). Included from
# tests/tsstrip/CMakeLists.txt. Seeds: the differential corpus (read only); new inputs go to
# BUILD/tests/tsstrip/fuzz-corpus. Reproduce a crash: BUILD/tests/tsstrip/fuzz_tsstrip FILE.
find_program(AL_CLANG NAMES clang clang-14 DOC "clang, for the libFuzzer targets in tests/fuzz")
if(NOT AL_CLANG)
    message(FATAL_ERROR "fuzz.tsstrip needs clang with libFuzzer: run scripts/bootstrap.sh "
        "(Debian packages clang and libclang-rt-dev)")
endif()

set(AL_TSSTRIP_FUZZ_DIR ${PROJECT_SOURCE_DIR}/tests/fuzz)
set(AL_TSSTRIP_SOURCES ${PROJECT_SOURCE_DIR}/src/tsstrip/lex.c ${PROJECT_SOURCE_DIR}/src/tsstrip/strip.c)
set(AL_TSSTRIP_HEADERS ${PROJECT_SOURCE_DIR}/src/tsstrip/lex.h ${PROJECT_SOURCE_DIR}/src/tsstrip/tsstrip.h)
set(tsstrip_fuzzer ${CMAKE_CURRENT_BINARY_DIR}/fuzz_tsstrip)
set(tsstrip_fuzz_corpus ${CMAKE_CURRENT_BINARY_DIR}/fuzz-corpus)

add_custom_command(OUTPUT ${tsstrip_fuzzer}
    COMMAND ${AL_CLANG} -std=c17 -D_POSIX_C_SOURCE=200809L -g -O1 -fno-omit-frame-pointer
        -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -Wall -Wextra
        -I${PROJECT_SOURCE_DIR}/src/tsstrip ${AL_TSSTRIP_FUZZ_DIR}/fuzz_tsstrip.c
        ${AL_TSSTRIP_SOURCES} -o ${tsstrip_fuzzer}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${tsstrip_fuzz_corpus}
    DEPENDS ${AL_TSSTRIP_FUZZ_DIR}/fuzz_tsstrip.c ${AL_TSSTRIP_SOURCES} ${AL_TSSTRIP_HEADERS}
    COMMENT "Building fuzz_tsstrip with clang (libFuzzer, ASan, UBSan)"
    VERBATIM)
add_custom_target(fuzz_tsstrip ALL DEPENDS ${tsstrip_fuzzer})

add_test(NAME fuzz.tsstrip
    COMMAND ${tsstrip_fuzzer} -max_total_time=15 -rss_limit_mb=2048 -max_len=8192 -timeout=10
        -dict=${AL_TSSTRIP_FUZZ_DIR}/tsstrip.dict -print_final_stats=1
        -artifact_prefix=${CMAKE_CURRENT_BINARY_DIR}/ ${tsstrip_fuzz_corpus}
        ${PROJECT_SOURCE_DIR}/tests/tsstrip/corpus
    WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(fuzz.tsstrip PROPERTIES LABELS "unit;fuzz" TIMEOUT 120
    ENVIRONMENT "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")
