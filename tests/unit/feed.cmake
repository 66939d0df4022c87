# The feed: generator, resume and fault logic (unit), and the running server
# driven over 127.0.0.1 (integration). feed_tool is `freshet feed` on its own.
add_executable(feed_tool ${CMAKE_SOURCE_DIR}/tests/integration/feed_tool.c)
target_link_libraries(feed_tool PRIVATE fr_feed)
fr_add_test(NAME unit_feed SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_feed.c
            LIBS fr_feed LABELS unit TIMEOUT 120)
