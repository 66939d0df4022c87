# libFuzzer target for the Parquet reader (tests/fuzz/fuzz_parquet.c). The
# main build uses gcc, so clang compiles the reader's sources directly with
# -fsanitize=fuzzer,address,undefined (add_custom_command), and the ctest
# test fuzz_parquet (label unit) runs it for 15 s from the seed corpus in
# tests/fuzz/corpus/parquet; new inputs and crash artifacts go to the build
# tree, never the source tree.
if(FR_FUZZ)
    find_program(FR_PQ_CLANG NAMES clang clang-14)
    pkg_check_modules(FR_PQ_FUZZ_ZSTD libzstd)
    find_path(FR_SNAPPY_INCLUDE snappy-c.h)
    find_library(FR_SNAPPY_LIB snappy)
    if(FR_PQ_CLANG AND FR_PQ_FUZZ_ZSTD_FOUND AND FR_SNAPPY_LIB)
        set(FR_PQ_FUZZ_DIR ${CMAKE_BINARY_DIR}/fuzz)
        set(FR_PQ_FUZZ_BIN ${FR_PQ_FUZZ_DIR}/fuzz_parquet)
        set(FR_PQ_FUZZ_SRC
            ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_parquet.c
            ${CMAKE_SOURCE_DIR}/src/parquet/thrift.c
            ${CMAKE_SOURCE_DIR}/src/parquet/encode.c
            ${CMAKE_SOURCE_DIR}/src/parquet/codec.c
            ${CMAKE_SOURCE_DIR}/src/parquet/footer.c
            ${CMAKE_SOURCE_DIR}/src/parquet/io.c
            ${CMAKE_SOURCE_DIR}/src/parquet/column.c
            ${CMAKE_SOURCE_DIR}/src/parquet/reader.c
            ${CMAKE_SOURCE_DIR}/src/core/buf.c
            ${CMAKE_SOURCE_DIR}/src/core/crc32.c
            ${CMAKE_SOURCE_DIR}/src/core/err.c
            ${CMAKE_SOURCE_DIR}/src/core/fsutil.c
            ${CMAKE_SOURCE_DIR}/src/core/syncset.c
            ${CMAKE_SOURCE_DIR}/src/core/bgsync.c
            ${CMAKE_SOURCE_DIR}/src/core/mem.c)
        file(MAKE_DIRECTORY ${FR_PQ_FUZZ_DIR}/parquet-corpus)
        add_custom_command(
            OUTPUT ${FR_PQ_FUZZ_BIN}
            COMMAND ${FR_PQ_CLANG} -std=c17 -g -O1 -D_GNU_SOURCE
                    -Wall -Wextra -Werror
                    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
                    -I${CMAKE_SOURCE_DIR}/src -I${FR_SNAPPY_INCLUDE}
                    ${FR_PQ_FUZZ_SRC} ${FR_PQ_FUZZ_ZSTD_LDFLAGS} ${FR_SNAPPY_LIB} -lm
                    -o ${FR_PQ_FUZZ_BIN}
            DEPENDS ${FR_PQ_FUZZ_SRC}
                    ${CMAKE_SOURCE_DIR}/src/parquet/parquet.h
                    ${CMAKE_SOURCE_DIR}/src/parquet/parquet_int.h
            COMMENT "Building fuzz_parquet with clang and libFuzzer"
            VERBATIM)
        add_custom_target(fuzz_parquet_bin ALL DEPENDS ${FR_PQ_FUZZ_BIN})
        add_test(NAME fuzz_parquet
                 COMMAND ${FR_PQ_FUZZ_BIN} -max_total_time=15 -timeout=10 -rss_limit_mb=2048
                         -malloc_limit_mb=1024 -print_final_stats=1
                         -artifact_prefix=${FR_PQ_FUZZ_DIR}/parquet-
                         ${FR_PQ_FUZZ_DIR}/parquet-corpus
                         ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/parquet)
        set_tests_properties(fuzz_parquet PROPERTIES LABELS unit TIMEOUT 90)
    else()
        message(WARNING "FR_FUZZ is ON but clang, libzstd or snappy is missing: fuzz_parquet is not built")
    endif()
endif()
