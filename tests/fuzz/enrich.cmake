# libFuzzer target for src/enrich (tests/fuzz/fuzz_enrich.c): the API answer
# parser against src/core/json.c's grammar, and title normalisation
# (idempotent, well-formed). Built with clang like fuzz_gate (the main build
# uses gcc); the ctest test fuzz_enrich (label unit) runs it for 10 s from
# tests/fuzz/corpus/enrich; new inputs and crashes go to the build tree.
if(FR_FUZZ)
    find_program(FR_ENRICH_CLANG NAMES clang clang-14)
    if(FR_ENRICH_CLANG)
        set(FR_ENRICH_FUZZ_DIR ${CMAKE_BINARY_DIR}/fuzz)
        set(FR_ENRICH_FUZZ_BIN ${FR_ENRICH_FUZZ_DIR}/fuzz_enrich)
        set(FR_ENRICH_FUZZ_SRC
            ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_enrich.c
            ${CMAKE_SOURCE_DIR}/src/enrich/parse.c
            ${CMAKE_SOURCE_DIR}/src/enrich/norm.c
            ${CMAKE_SOURCE_DIR}/src/core/buf.c
            ${CMAKE_SOURCE_DIR}/src/core/err.c
            ${CMAKE_SOURCE_DIR}/src/core/json.c ${CMAKE_SOURCE_DIR}/src/core/utf8.c)
        file(MAKE_DIRECTORY ${FR_ENRICH_FUZZ_DIR}/enrich-corpus)
        add_custom_command(
            OUTPUT ${FR_ENRICH_FUZZ_BIN}
            COMMAND ${FR_ENRICH_CLANG} -std=c17 -g -O1 -D_GNU_SOURCE
                    -Wall -Wextra -Werror
                    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
                    -I${CMAKE_SOURCE_DIR}/src
                    ${FR_ENRICH_FUZZ_SRC} -o ${FR_ENRICH_FUZZ_BIN}
            DEPENDS ${FR_ENRICH_FUZZ_SRC}
                    ${CMAKE_SOURCE_DIR}/src/enrich/enrich.h
                    ${CMAKE_SOURCE_DIR}/src/enrich/enrich_int.h
            COMMENT "Building fuzz_enrich with clang and libFuzzer"
            VERBATIM)
        add_custom_target(fuzz_enrich_bin ALL DEPENDS ${FR_ENRICH_FUZZ_BIN})
        add_test(NAME fuzz_enrich
                 COMMAND ${FR_ENRICH_FUZZ_BIN} -max_total_time=10 -max_len=4096 -timeout=10
                         -rss_limit_mb=2048 -print_final_stats=1
                         -artifact_prefix=${FR_ENRICH_FUZZ_DIR}/enrich-
                         ${FR_ENRICH_FUZZ_DIR}/enrich-corpus ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/enrich)
        set_tests_properties(fuzz_enrich PROPERTIES LABELS unit TIMEOUT 60)
    else()
        message(WARNING "FR_FUZZ is ON but clang was not found: fuzz_enrich is not built")
    endif()
endif()
