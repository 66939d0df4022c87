# Unit tests for src/pipeline's parts that run without a lake: the
# decode-ahead thread against decoding inline (recorded events, broken
# copies, records bigger than a batch, source errors, stops).
fr_add_test(NAME unit_pipeline_ahead SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_pipeline_ahead.c
            LIBS fr_pipeline LABELS unit TIMEOUT 120)
# The checkpoint file: streamed and buffered saves against the byte table,
# refused versions and damage, a write failing half way (file-size limit).
fr_add_test(NAME unit_pipeline_checkpoint SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_pipeline_checkpoint.c
            LIBS fr_pipeline LABELS unit TIMEOUT 120)
# The processor's own maintenance on a local lake with the shipped settings:
# compacted files keep row groups of about 1 MiB (what bounds the live
# processor's memory during a round), with every row and their statistics.
fr_add_test(NAME unit_pipeline_maint SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_pipeline_maint.c
            LIBS fr_pipeline LABELS unit TIMEOUT 120)
# Issue 33's label columns on a lake written before them (ADR 0057): added by
# schema evolution with freshet's field ids, refused when ids disagree, and
# data files without them read as nulls.
fr_add_test(NAME unit_pipeline_evolve SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_pipeline_evolve.c
            LIBS fr_pipeline LABELS unit TIMEOUT 60)
