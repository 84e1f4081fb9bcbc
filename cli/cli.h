/* cli/cli.h -- the subcommands of the tpusim command line. main.c only
 * dispatches: each subcommand parses its own arguments in its own file
 * (cmd_run.c: run, check, platform; cmd_chips.c; cmd_maskinfo.c;
 * cmd_sweep.c; cmd_compare.c; cmd_expand.c; cmd_plan.c). Each returns the exit status: 0 ok, 1 runtime
 * failure, 2 bad input, 130 interrupted. argv[0] is the subcommand's name. */
#ifndef TPUSIM_CLI_CLI_H
#define TPUSIM_CLI_CLI_H

int cmd_run(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_platform(int argc, char **argv);
int cmd_chips(int argc, char **argv);
int cmd_maskinfo(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_expand(int argc, char **argv);
int cmd_plan(int argc, char **argv);

/* The scenario of `run --hlo FILE --chip CHIP --topology AxB` (cli/cli_hlo.c):
 * YAML text (new string) naming FILE from its directory, and in '*file' (new
 * string) the name it is read under, "FILE (--hlo)". NULL after a usage
 * error (printed). */
char *cli_hlo_scenario(const char *hlo, const char *chip, const char *topology, char **file);

/* Prints "tpusim: 'msg'" and the usage to stderr; returns 2. */
int cli_usage_error(const char *msg);

#endif
