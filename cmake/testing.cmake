# fr_add_test(NAME name SOURCES ... LIBS ... LABELS ... [TIMEOUT s] [ARGS ...])
# Builds one test executable and registers it with ctest. Tests find the
# shared data folder through FR_SHARED_DIR (../shared beside the checkout)
# and skip with a clear message when it is absent (exit code 77).
set(FR_SHARED_DIR "${CMAKE_SOURCE_DIR}/../shared" CACHE PATH "The shared/ folder with recorded data")
function(fr_add_test)
    cmake_parse_arguments(T "" "NAME;TIMEOUT" "SOURCES;LIBS;LABELS;ARGS" ${ARGN})
    add_executable(${T_NAME} ${T_SOURCES})
    target_link_libraries(${T_NAME} PRIVATE ${T_LIBS})
    target_include_directories(${T_NAME} PRIVATE ${CMAKE_SOURCE_DIR}/tests)
    add_test(NAME ${T_NAME} COMMAND ${T_NAME} ${T_ARGS})
    if(NOT T_TIMEOUT)
        set(T_TIMEOUT 300)
    endif()
    set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT}
        SKIP_RETURN_CODE 77
        ENVIRONMENT "FR_SHARED_DIR=${FR_SHARED_DIR};FR_BINARY=$<TARGET_FILE:freshet>;FR_SOURCE_DIR=${CMAKE_SOURCE_DIR};FR_BUILD_DIR=${CMAKE_BINARY_DIR}")
endfunction()

# fr_add_script_test(NAME name COMMAND ... LABELS ... [TIMEOUT s])
# Registers a test implemented as a script (shell or node).
function(fr_add_script_test)
    cmake_parse_arguments(T "" "NAME;TIMEOUT" "COMMAND;LABELS" ${ARGN})
    add_test(NAME ${T_NAME} COMMAND ${T_COMMAND})
    if(NOT T_TIMEOUT)
        set(T_TIMEOUT 600)
    endif()
    set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT}
        SKIP_RETURN_CODE 77
        ENVIRONMENT "FR_SHARED_DIR=${FR_SHARED_DIR};FR_BINARY=$<TARGET_FILE:freshet>;FR_SOURCE_DIR=${CMAKE_SOURCE_DIR};FR_BUILD_DIR=${CMAKE_BINARY_DIR}")
endfunction()
