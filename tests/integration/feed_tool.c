/*
 * feed_tool.c — a stand-alone `feed` for tests: main() hands its arguments
 * to fr_cmd_feed exactly as the freshet binary does for `freshet feed`, so
 * the feed's tests do not depend on the command table in src/main.
 */
#include "feed/feed_cmd.h"

int main(int argc, char **argv)
{
    return fr_cmd_feed(".", argc, argv);
}
