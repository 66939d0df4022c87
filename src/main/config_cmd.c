/*
 * config_cmd.c — `freshet config`: print the effective configuration, or
 * with --markdown the reference document generated from the option table.
 */
#include "main/cmd.h"

#include <getopt.h>
#include <stdio.h>

int fr_cmd_config(struct fr_conf *conf, int argc, char **argv)
{
    static const struct option opts[] = {
        {"markdown", no_argument, 0, 'm'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int markdown = 0;
    int c;
    while ((c = getopt_long(argc, argv, "mh", opts, NULL)) != -1) {
        switch (c) {
        case 'm': markdown = 1; break;
        case 'h':
            printf("usage: freshet config [--markdown]\n\n"
                   "Print the effective configuration (defaults, then --config FILE, then the\n"
                   "environment for secrets, then --set and --data), one value per line with\n"
                   "where it came from. Secrets print as (set) or (unset), never their value.\n"
                   "--markdown prints docs/CONFIGURATION.md, generated from the option table.\n");
            return 0;
        default: return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "freshet config: unexpected argument \"%s\"\n", argv[optind]);
        return 2;
    }
    if (markdown) {
        fr_conf_print_markdown(stdout);
    } else {
        fr_conf_print(conf, stdout);
    }
    return 0;
}
