# The Iceberg REST catalog's update logic (src/iceberg/rest_updates.c) and
# namespaces (catalog.c): requirements, updates, transactions, create.
fr_add_test(NAME unit_iceberg_rest SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_iceberg_rest.c
            LIBS fr_iceberg LABELS unit TIMEOUT 120)
