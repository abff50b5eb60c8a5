/* SPDX-License-Identifier: BSD-3-Clause */
/* upc_strict.h — UPC 1.3 §7.1.1: upc.h, with strict the default for shared accesses of the including
 * file. Without a UPC compiler the consistency of an access is the entry point called
 * (__get…/__put… relaxed, __gets…/__puts… strict), so this is upc.h. */
#ifndef PORTICO_UPC_STRICT_H
#define PORTICO_UPC_STRICT_H
#ifdef __UPC__
#pragma upc strict
#endif
#include <upc.h>
#endif
