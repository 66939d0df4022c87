# The optional libraries opened on first use (src/core/dynlib.h, src/lazy).
if(FR_KAFKA)
    fr_add_test(NAME unit_lazy SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_lazy.c
                LIBS fr_lazy_curl fr_lazy_rdkafka fr_lazy_mhd fr_lazy_snappy fr_lazy_crypto fr_core
                LABELS unit)
endif()
