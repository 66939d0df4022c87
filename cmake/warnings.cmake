# Warnings and sanitizers for every target in the tree.
add_compile_options(-Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes
                    -Wvla -Wformat=2 -Wno-format-nonliteral)
if(FR_WERROR)
    add_compile_options(-Werror)
endif()
if(FR_SANITIZE STREQUAL "asan-ubsan")
    add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer
                        -fno-sanitize-recover=all)
    add_link_options(-fsanitize=address,undefined)
elseif(NOT FR_SANITIZE STREQUAL "")
    message(FATAL_ERROR "FR_SANITIZE must be empty or asan-ubsan, not ${FR_SANITIZE}")
endif()
