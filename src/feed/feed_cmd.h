/*
 * feed_cmd.h — the `freshet feed` command.
 *
 * fr_cmd_feed parses its own flags (argv[0] is the command name, getopt is
 * reset here), serves until SIGTERM or SIGINT, writes the truth file and
 * returns the exit status: 0 success, 1 failure, 2 usage error. It blocks
 * SIGTERM/SIGINT in the calling thread while it runs (the threads it starts
 * inherit the mask) and restores the mask before returning. Call it from
 * the main thread of a process that runs nothing else.
 */
#ifndef FR_FEED_CMD_H
#define FR_FEED_CMD_H

/* data_dir is accepted for symmetry with the other commands; the feed keeps
 * no state in it (the truth file goes where --truth says). */
int fr_cmd_feed(const char *data_dir, int argc, char **argv);

#endif
