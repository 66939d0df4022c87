# The running feed over 127.0.0.1. feed_tool is `freshet feed` on its own
# (main() calls fr_cmd_feed), so these tests do not depend on src/main.
add_executable(feed_tool ${CMAKE_SOURCE_DIR}/tests/integration/feed_tool.c)
target_link_libraries(feed_tool PRIVATE fr_feed)
fr_add_script_test(NAME integ_feed_server
                   COMMAND bash ${CMAKE_SOURCE_DIR}/tests/integration/feed_server.sh $<TARGET_FILE:feed_tool>
                   LABELS integration TIMEOUT 120)
fr_add_script_test(NAME unit_feed_docs
                   COMMAND sh ${CMAKE_SOURCE_DIR}/tests/integration/feed_docs.sh $<TARGET_FILE:feed_tool>
                           ${CMAKE_SOURCE_DIR}/docs/FEED.md
                   LABELS unit TIMEOUT 30)
