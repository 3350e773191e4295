/* A stand-in for an executable built by tgc build --generate: the
 * hand-written decoder of gen_prog.h (prefill over 4 tokens, step over
 * one, batch 3, max_seq 10, vocabulary 11) with main = rt_gen_main.
 * run_gen.py drives it through every flag and error. */
#include "gen_prog.h"

int main(int argc, char **argv) {
    return rt_gen_main(&gp_gen, argc, argv);
}
