# libFuzzer target for src/objstore/xml.c (tests/fuzz/fuzz_s3_xml.c): every
# S3 answer parser on arbitrary bytes, and a truncated document never passes.
# As for the other targets, clang compiles the sources directly and the
# ctest test fuzz_s3_xml (label unit) runs it for 10 s from the seed corpus
# in tests/fuzz/corpus/s3xml; new inputs and artifacts stay in the build tree.
if(FR_FUZZ)
    find_program(FR_S3XML_CLANG NAMES clang clang-14)
    if(FR_S3XML_CLANG)
        set(FR_S3XML_FUZZ_DIR ${CMAKE_BINARY_DIR}/fuzz)
        set(FR_S3XML_FUZZ_BIN ${FR_S3XML_FUZZ_DIR}/fuzz_s3_xml)
        set(FR_S3XML_FUZZ_SRC
            ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_s3_xml.c
            ${CMAKE_SOURCE_DIR}/src/objstore/xml.c
            ${CMAKE_SOURCE_DIR}/src/core/err.c)
        file(MAKE_DIRECTORY ${FR_S3XML_FUZZ_DIR}/s3xml-corpus)
        add_custom_command(
            OUTPUT ${FR_S3XML_FUZZ_BIN}
            COMMAND ${FR_S3XML_CLANG} -std=c17 -g -O1 -D_GNU_SOURCE
                    -Wall -Wextra -Werror
                    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
                    -I${CMAKE_SOURCE_DIR}/src
                    ${FR_S3XML_FUZZ_SRC} -o ${FR_S3XML_FUZZ_BIN}
            DEPENDS ${FR_S3XML_FUZZ_SRC}
                    ${CMAKE_SOURCE_DIR}/src/objstore/objstore_int.h
                    ${CMAKE_SOURCE_DIR}/src/objstore/s3.h
            COMMENT "Building fuzz_s3_xml with clang and libFuzzer"
            VERBATIM)
        add_custom_target(fuzz_s3_xml_bin ALL DEPENDS ${FR_S3XML_FUZZ_BIN})
        add_test(NAME fuzz_s3_xml
                 COMMAND ${FR_S3XML_FUZZ_BIN} -max_total_time=10 -max_len=4096 -timeout=10
                         -rss_limit_mb=2048 -print_final_stats=1
                         -artifact_prefix=${FR_S3XML_FUZZ_DIR}/s3xml-
                         ${FR_S3XML_FUZZ_DIR}/s3xml-corpus ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/s3xml)
        set_tests_properties(fuzz_s3_xml PROPERTIES LABELS unit TIMEOUT 60)
    else()
        message(WARNING "FR_FUZZ is ON but clang was not found: fuzz_s3_xml is not built")
    endif()
endif()
