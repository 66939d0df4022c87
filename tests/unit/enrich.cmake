# The enrichment client's unit tests: token bucket and backoff on a fake
# clock, the LRU cache against a model, batching, answer parsing (including
# malformed answers), title normalisation, local client paths.
fr_add_test(NAME unit_enrich SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_enrich.c
            LIBS fr_enrich LABELS unit TIMEOUT 60)
# Labels of Wikidata items (issue 33): the wiki's content language, the
# label chosen from wbgetentities answers, the cache keeping label text.
fr_add_test(NAME unit_enrich_label SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_enrich_label.c
            LIBS fr_enrich LABELS unit TIMEOUT 60)
