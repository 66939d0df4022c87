# libFuzzer target for src/process (tests/fuzz/fuzz_gate.c): the quality
# gate against src/core/json.c's grammar and extraction, and fr_proc with
# small caps through a save/load round trip. The main build uses gcc, so
# clang compiles the sources directly with -fsanitize=fuzzer,address,
# undefined (add_custom_command), and the ctest test fuzz_gate (label unit)
# runs it for 10 s from the seed corpus in tests/fuzz/corpus/gate; new
# inputs and crash artifacts go to the build tree, never the source tree.
if(FR_FUZZ)
    find_program(FR_GATE_CLANG NAMES clang clang-14)
    if(FR_GATE_CLANG)
        set(FR_GATE_FUZZ_DIR ${CMAKE_BINARY_DIR}/fuzz)
        set(FR_GATE_FUZZ_BIN ${FR_GATE_FUZZ_DIR}/fuzz_gate)
        set(FR_GATE_FUZZ_SRC
            ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_gate.c
            ${CMAKE_SOURCE_DIR}/src/process/state.c
            ${CMAKE_SOURCE_DIR}/src/process/gate.c
            ${CMAKE_SOURCE_DIR}/src/process/watermark.c
            ${CMAKE_SOURCE_DIR}/src/process/dedup.c
            ${CMAKE_SOURCE_DIR}/src/process/window.c
            ${CMAKE_SOURCE_DIR}/src/process/topk.c
            ${CMAKE_SOURCE_DIR}/src/process/proc.c
            ${CMAKE_SOURCE_DIR}/src/core/buf.c
            ${CMAKE_SOURCE_DIR}/src/core/err.c
            ${CMAKE_SOURCE_DIR}/src/core/crc32c.c ${CMAKE_SOURCE_DIR}/src/core/crc32.c
            ${CMAKE_SOURCE_DIR}/src/core/clock.c
            ${CMAKE_SOURCE_DIR}/src/core/json.c ${CMAKE_SOURCE_DIR}/src/core/utf8.c)
        file(MAKE_DIRECTORY ${FR_GATE_FUZZ_DIR}/gate-corpus)
        add_custom_command(
            OUTPUT ${FR_GATE_FUZZ_BIN}
            COMMAND ${FR_GATE_CLANG} -std=c17 -g -O1 -D_GNU_SOURCE
                    -Wall -Wextra -Werror
                    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
                    -I${CMAKE_SOURCE_DIR}/src
                    ${FR_GATE_FUZZ_SRC} -o ${FR_GATE_FUZZ_BIN}
            DEPENDS ${FR_GATE_FUZZ_SRC}
                    ${CMAKE_SOURCE_DIR}/src/process/process.h
                    ${CMAKE_SOURCE_DIR}/src/process/process_int.h
                    ${CMAKE_SOURCE_DIR}/tests/gate_same.h
            COMMENT "Building fuzz_gate with clang and libFuzzer"
            VERBATIM)
        add_custom_target(fuzz_gate_bin ALL DEPENDS ${FR_GATE_FUZZ_BIN})
        add_test(NAME fuzz_gate
                 COMMAND ${FR_GATE_FUZZ_BIN} -max_total_time=10 -max_len=4096 -timeout=10
                         -rss_limit_mb=2048 -print_final_stats=1
                         -artifact_prefix=${FR_GATE_FUZZ_DIR}/gate-
                         ${FR_GATE_FUZZ_DIR}/gate-corpus ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/gate)
        set_tests_properties(fuzz_gate PROPERTIES LABELS unit TIMEOUT 60)
    else()
        message(WARNING "FR_FUZZ is ON but clang was not found: fuzz_gate is not built")
    endif()
endif()
