# libFuzzer targets for every parser of bytes freshet did not just produce in
# the same process (issue 34; docs/FUZZING.md): Iceberg's Avro container,
# manifests, manifest lists and table metadata; the REST catalog's request
# bodies and answers; log segments and torn-tail recovery; the checkpoint,
# the offsets WAL and the enrichment state; the stats files serve maps; the
# INI configuration. As for the older targets (sse.cmake, ...), clang
# compiles each target's sources directly with -fsanitize=fuzzer,address,
# undefined, and a ctest test fuzz_<name> (label unit) runs it for a few
# seconds from tests/fuzz/corpus/<name>; new inputs and crash artifacts go
# to the build tree, never the source tree.
if(FR_FUZZ)
    find_program(FR_PARSERS_CLANG NAMES clang clang-14)
    if(FR_PARSERS_CLANG)
        set(FR_PARSERS_FUZZ_DIR ${CMAKE_BINARY_DIR}/fuzz)
        # fr_fuzz_parser(NAME SECONDS SOURCES src... [LIBS lib...] [FLAGS flag...]): sources
        # are relative to the source tree; every src/ header is a dependency.
        function(fr_fuzz_parser name seconds)
            cmake_parse_arguments(FZ "" "" "SOURCES;LIBS;FLAGS" ${ARGN})
            set(bin ${FR_PARSERS_FUZZ_DIR}/fuzz_${name})
            set(srcs ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_${name}.c)
            foreach(s IN LISTS FZ_SOURCES)
                list(APPEND srcs ${CMAKE_SOURCE_DIR}/${s})
            endforeach()
            file(GLOB_RECURSE hdrs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/*.h)
            file(MAKE_DIRECTORY ${FR_PARSERS_FUZZ_DIR}/${name}-corpus)
            add_custom_command(
                OUTPUT ${bin}
                COMMAND ${FR_PARSERS_CLANG} -std=c17 -g -O1 -D_GNU_SOURCE
                        -Wall -Wextra -Werror
                        -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
                        ${FZ_FLAGS} -I${CMAKE_SOURCE_DIR}/src ${srcs} ${FZ_LIBS} -o ${bin}
                DEPENDS ${srcs} ${hdrs}
                COMMENT "Building fuzz_${name} with clang and libFuzzer"
                VERBATIM)
            add_custom_target(fuzz_${name}_bin ALL DEPENDS ${bin})
            add_test(NAME fuzz_${name}
                     COMMAND ${bin} -max_total_time=${seconds} -max_len=65536 -timeout=10
                             -rss_limit_mb=2048 -malloc_limit_mb=1024 -print_final_stats=1
                             -artifact_prefix=${FR_PARSERS_FUZZ_DIR}/${name}-
                             ${FR_PARSERS_FUZZ_DIR}/${name}-corpus
                             ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/${name})
            set_tests_properties(fuzz_${name} PROPERTIES LABELS unit TIMEOUT 90)
        endfunction()

        set(FR_FUZZ_CORE src/core/buf.c src/core/err.c src/core/json.c src/core/utf8.c
            src/core/fsutil.c src/core/syncset.c src/core/bgsync.c src/core/crc32.c)
        fr_fuzz_parser(iceberg 10 SOURCES
            src/iceberg/avro.c src/iceberg/manifest.c src/iceberg/metadata.c
            src/iceberg/util.c ${FR_FUZZ_CORE})
        fr_fuzz_parser(log 10 SOURCES
            src/log/segment.c src/log/reader.c src/log/writer.c src/log/log.c src/log/list.c
            src/core/crc32c.c src/core/diag.c src/core/clock.c ${FR_FUZZ_CORE})
        file(GLOB FR_FUZZ_PROCESS_SRC RELATIVE ${CMAKE_SOURCE_DIR} CONFIGURE_DEPENDS
             ${CMAKE_SOURCE_DIR}/src/process/*.c)
        file(GLOB FR_FUZZ_ENRICH_SRC RELATIVE ${CMAKE_SOURCE_DIR} CONFIGURE_DEPENDS
             ${CMAKE_SOURCE_DIR}/src/enrich/*.c)
        file(GLOB FR_FUZZ_STATS_SRC RELATIVE ${CMAKE_SOURCE_DIR} CONFIGURE_DEPENDS
             ${CMAKE_SOURCE_DIR}/src/stats/*.c)
        fr_fuzz_parser(state 10 SOURCES
            src/pipeline/checkpoint.c src/pipeline/estage.c ${FR_FUZZ_PROCESS_SRC}
            ${FR_FUZZ_ENRICH_SRC} ${FR_FUZZ_STATS_SRC} src/conf/conf.c src/lazy/curl.c
            src/core/crc32c.c src/core/diag.c src/core/clock.c src/core/mem.c src/core/dynlib.c
            ${FR_FUZZ_CORE}
            LIBS -linih -lm FLAGS "-DFR_VERSION=\"fuzz\"")
        fr_fuzz_parser(stats 10 SOURCES ${FR_FUZZ_STATS_SRC} ${FR_FUZZ_PROCESS_SRC}
            src/core/clock.c src/core/diag.c src/core/crc32c.c ${FR_FUZZ_CORE} LIBS -lm)
        file(GLOB FR_FUZZ_ICEBERG_SRC RELATIVE ${CMAKE_SOURCE_DIR} CONFIGURE_DEPENDS
             ${CMAKE_SOURCE_DIR}/src/iceberg/*.c)
        file(GLOB FR_FUZZ_PARQUET_SRC RELATIVE ${CMAKE_SOURCE_DIR} CONFIGURE_DEPENDS
             ${CMAKE_SOURCE_DIR}/src/parquet/*.c)
        fr_fuzz_parser(rest 10 SOURCES ${FR_FUZZ_ICEBERG_SRC} ${FR_FUZZ_PARQUET_SRC}
            src/lazy/curl.c src/lazy/crypto.c src/lazy/snappy.c src/core/dynlib.c
            src/core/crc32c.c src/core/diag.c src/core/clock.c src/core/mem.c ${FR_FUZZ_CORE}
            LIBS -lsqlite3 -lzstd -lm FLAGS "-DFR_VERSION=\"fuzz\"")
        fr_fuzz_parser(conf 10 SOURCES src/conf/conf.c src/core/err.c LIBS -linih
            FLAGS "-DFR_VERSION=\"fuzz\"")
    else()
        message(WARNING "FR_FUZZ is ON but clang was not found: the parser fuzz targets are not built")
    endif()
endif()
