# Unit tests of src/parquet: byte-level layers, then writer/reader round trips.
fr_add_test(NAME unit_parquet SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_parquet.c
            LIBS fr_parquet LABELS unit)
fr_add_test(NAME unit_parquet_rw SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_parquet_rw.c
            LIBS fr_parquet LABELS unit TIMEOUT 600)
# The CRC-32 of every page, against zlib's; a flip that decodes, refused (ADR 0062).
fr_add_test(NAME unit_parquet_crc SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_parquet_crc.c
            LIBS fr_parquet z LABELS unit)
