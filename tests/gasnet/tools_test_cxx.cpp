// SPDX-License-Identifier: BSD-3-Clause
// tools_test.c compiled as C++: the header's macros and declarations must work there too.
#include "tools_test.c" // NOLINT(bugprone-suspicious-include): on purpose, see above
