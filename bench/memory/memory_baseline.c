/* SPDX-License-Identifier: BSD-3-Clause */
/* The physical baseline of bench/memory: a C program that does nothing but reach the checkpoint,
 * started by the same launcher as the others (what a process costs before any library). */
#include "memory_checkpoint.h"

int main(void) {
    memory_checkpoint();
    return 0;
}
