/* The tgc command: subcommand dispatch, flags, exit codes (cli.md). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver/driver.h"

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} commands[] = {
    {"check", cmd_check, "parse and check a graph; print nothing when it is correct"},
    {"show", cmd_show,
     "print every value's shape, dtype, strides, and whether it is a view or a copy"},
    {"report", cmd_report,
     "plan the memory; does the model fit a device, at which dtype and batch"},
    {"build", cmd_build, "compile a graph into an executable"},
    {"compile", cmd_compile, "compile a graph into an object file and a C header"},
    {"run", cmd_run, "compile a graph and run it once on the given inputs"},
    {"import", cmd_import, "write an ONNX model as a .tg graph and a safetensors weights file"},
};

void usage(FILE *out) {
    fprintf(out, "usage: tgc <command> FILE [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fprintf(
        out,
        "\nrun 'tgc COMMAND --help' for a command's options; 'tgc --version' for the version\n");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("tgc %s\n", TGC_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "tgc: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
