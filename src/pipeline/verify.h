/*
 * verify.h — `freshet verify [--json] [--memory-mb N]`: reads one
 * consistent cut of the six tables and checks the delivery contract
 * (docs/VERIFY.md): bronze against the log offsets and dlq, positions and
 * ids unique, silver covering bronze, files listed once, gold recomputed
 * from silver, late_arrivals consistent with bronze, and freshness.
 *
 * Read-only: it never writes to the lake or the log, so it can run beside
 * a live pipeline. It holds at most its memory budget of keys (hash-
 * partitioned passes) and lowers its own CPU priority to nice 10.
 * Exit status: 0 every check passes, 1 a check fails or the lake cannot be
 * read, 2 usage. Runs on the calling thread only.
 */
#ifndef FR_PIPELINE_VERIFY_H
#define FR_PIPELINE_VERIFY_H

#include "conf/conf.h"

int fr_cmd_verify(struct fr_conf *conf, int argc, char **argv);

#endif
