fr_add_test(NAME unit_conf SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_conf.c
            LIBS fr_conf LABELS unit)
# docs/CONFIGURATION.md is generated from the option table; fail when it drifts.
fr_add_script_test(NAME docs_configuration_in_sync LABELS unit
    COMMAND sh ${CMAKE_SOURCE_DIR}/tests/unit/docs_in_sync.sh ${CMAKE_SOURCE_DIR}/docs/CONFIGURATION.md
            $<TARGET_FILE:freshet> config --markdown)
