/*
 * pipeline.h — `freshet process`: the log to the lake, one epoch at a time.
 */
#ifndef FR_PIPELINE_H
#define FR_PIPELINE_H

#include "conf/conf.h"

int fr_cmd_process(struct fr_conf *conf, int argc, char **argv);

#endif
