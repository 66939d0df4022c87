# The enrichment client against `freshet feed`'s MediaWiki-API fixture on
# 127.0.0.1: outcomes match the fixture's deterministic answers, with and
# without faults (503s, latency, 429 + Retry-After, maxlag); none lost.
fr_add_test(NAME integ_enrich_fixture
            SOURCES ${CMAKE_SOURCE_DIR}/tests/integration/test_enrich_fixture.c
            LIBS fr_enrich fr_feed LABELS integration TIMEOUT 120)
fr_add_script_test(NAME integ_enrich_feed_flags
                   COMMAND bash ${CMAKE_SOURCE_DIR}/tests/integration/enrich_feed_flags.sh
                           $<TARGET_FILE:feed_tool>
                   LABELS integration TIMEOUT 60)
# The enrichment stage inside `freshet process`: a control run, a faulty API
# (slow, half the requests failing, a small pending table), `freshet dlq
# replay --lookups`, and SIGKILLs while lookups are outstanding, checked by
# DuckDB against the control and against a recomputation from silver_topics.
fr_add_script_test(NAME integration_enrich_process
                   COMMAND bash ${CMAKE_SOURCE_DIR}/tests/integration/enrich_process.sh
                   LABELS integration chaos TIMEOUT 600)
# Enrichment in the scale-out mode: shards look up their own partition's
# edits, the finalizer settles gold_top_topics at the minimum of the shards'
# topics frontiers; a faulty API and SIGKILLs of shards and the finalizer,
# checked by DuckDB against a control run and a recomputation, and by verify.
fr_add_script_test(NAME integration_enrich_shards
                   COMMAND bash ${CMAKE_SOURCE_DIR}/tests/integration/enrich_shards.sh
                   LABELS integration chaos TIMEOUT 600)
# `freshet dlq replay --lookups` through `freshet serve` as the REST catalog
# (issue 31): every settled dead letter lands once, gold_top_topics is
# recomputed in the same REST transaction, equal to a control.
fr_add_script_test(NAME integration_enrich_replay_rest
                   COMMAND bash ${CMAKE_SOURCE_DIR}/tests/integration/enrich_replay_rest.sh
                   LABELS integration TIMEOUT 600)
