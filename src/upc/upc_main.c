/* SPDX-License-Identifier: BSD-3-Clause */
/* The runtime's main, as GCC UPC's runtime owns main and calls the program's upc_main (a UPC
 * compiler renames the program's main). In a static library of its own (libportico-upc-main.a)
 * so that a program that defines main itself never pulls it in. */
#include <portico/upc_abi.h>

/* The program's `upc_shared` section, where a UPC compiler places shared statics (the linker
 * defines these for a section whose name is a C identifier; weak: most programs have none). */
extern char __start_upc_shared[] __attribute__((weak)); // NOLINT(bugprone-reserved-identifier)
extern char __stop_upc_shared[] __attribute__((weak));  // NOLINT(bugprone-reserved-identifier)

int main(int argc, char **argv, char **envp) {
    portico_upc_register_statics(__start_upc_shared, __stop_upc_shared);
    portico_upc_init(&argc, &argv);
    const int rc = upc_main(argc, argv, envp);
    portico_upc_finalize();
    return rc;
}
