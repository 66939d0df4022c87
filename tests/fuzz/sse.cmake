# libFuzzer target for the SSE parser. The main build uses gcc, so the
# target is compiled by clang directly (add_custom_command) with
# -fsanitize=fuzzer,address,undefined from the parser's own sources, and the
# ctest test fuzz_sse (label unit) runs it for 10 s on the seed corpus in
# tests/fuzz/corpus/sse; new inputs go to the build tree, never the source.
if(FR_FUZZ)
    find_program(FR_SSE_CLANG NAMES clang clang-14)
    if(FR_SSE_CLANG)
        set(FR_SSE_FUZZ_DIR ${CMAKE_BINARY_DIR}/fuzz)
        set(FR_SSE_FUZZ_BIN ${FR_SSE_FUZZ_DIR}/fuzz_sse)
        set(FR_SSE_FUZZ_SRC
            ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_sse.c
            ${CMAKE_SOURCE_DIR}/src/sse/parser.c
            ${CMAKE_SOURCE_DIR}/src/core/buf.c
            ${CMAKE_SOURCE_DIR}/src/core/err.c)
        file(MAKE_DIRECTORY ${FR_SSE_FUZZ_DIR}/sse-corpus)
        add_custom_command(
            OUTPUT ${FR_SSE_FUZZ_BIN}
            COMMAND ${FR_SSE_CLANG} -std=c17 -g -O1 -D_GNU_SOURCE
                    -Wall -Wextra -Werror
                    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
                    -I${CMAKE_SOURCE_DIR}/src -I${CMAKE_SOURCE_DIR}/tests/unit
                    ${FR_SSE_FUZZ_SRC} -o ${FR_SSE_FUZZ_BIN}
            DEPENDS ${FR_SSE_FUZZ_SRC}
                    ${CMAKE_SOURCE_DIR}/tests/unit/test_sse_oracle.c
                    ${CMAKE_SOURCE_DIR}/src/sse/sse.h
                    ${CMAKE_SOURCE_DIR}/src/sse/sse_int.h
            COMMENT "Building fuzz_sse with clang and libFuzzer"
            VERBATIM)
        add_custom_target(fuzz_sse_bin ALL DEPENDS ${FR_SSE_FUZZ_BIN})
        add_test(NAME fuzz_sse
                 COMMAND ${FR_SSE_FUZZ_BIN} -max_total_time=10 -max_len=4096 -timeout=10
                         -rss_limit_mb=2048 -print_final_stats=1
                         -artifact_prefix=${FR_SSE_FUZZ_DIR}/sse-
                         ${FR_SSE_FUZZ_DIR}/sse-corpus ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/sse)
        set_tests_properties(fuzz_sse PROPERTIES LABELS unit TIMEOUT 60)
    else()
        message(WARNING "FR_FUZZ is ON but clang was not found: fuzz_sse is not built")
    endif()
endif()
