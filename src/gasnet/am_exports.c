/* SPDX-License-Identifier: BSD-3-Clause */
/* Not compiled: src/gasnet/CMakeLists.txt runs it through the C preprocessor, which expands
 * gasnet.h's table of the Active Message entry points into one "GASNETP_EXPORTED_NAME <name>"
 * per function, the names libgasnet.map exports. */
#define GASNET_SEQ
#include <gasnet.h>

#define GASNETP_AM_EXPORT_ONE(M, family, params, leading) GASNETP_EXPORTED_NAME gasnet_AM##family##M
#define GASNETP_AM_EXPORT(M) GASNETP_AM_FAMILIES(GASNETP_AM_EXPORT_ONE, M)
GASNETP_AM_ARGUMENT_COUNTS(GASNETP_AM_EXPORT)
