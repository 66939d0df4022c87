# src/objstore without a network: SigV4 against AWS's published vectors,
# URI encoding, the XML answers (pagination, malformed documents), the
# s3:// URI and path-to-key mapping. The S3 client against a real peer is
# in tests/integration/objstore.cmake.
fr_add_test(NAME unit_objstore SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_objstore.c
            LIBS fr_objstore LABELS unit TIMEOUT 60)
