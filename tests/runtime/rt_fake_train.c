/* A stand-in for an executable built by `tgc build --train`: the training
 * program of train_prog.h with main = rt_main, which hands over to
 * rt_train_main. run_train.py drives it through its flags and errors. */
#include "train_prog.h"

int main(int argc, char **argv) {
    return rt_main(&TP_PROGRAM, argc, argv);
}
