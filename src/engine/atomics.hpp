// SPDX-License-Identifier: BSD-3-Clause
// Portals atomic operations on data (spec §3.15.4–3.15.7): the legality table and the arithmetic.
// Where and when they are applied is the engine's business (data_movement.cpp).
#pragma once

#include <cstddef>

#include <portals4.h>

namespace portico::engine::atomics {

enum class Call { Atomic, FetchAtomic, Swap };

// Bytes of one item of the datatype; 0 for an unknown datatype.
size_t item_size(ptl_datatype_t type);
// Table 3-4: may this operation be used on this datatype by this call?
bool legal(ptl_op_t op, ptl_datatype_t type, Call call);
// CSWAP and its variants and MSWAP take an operand and work on exactly one item.
bool takes_operand(ptl_op_t op);

// t[i] = op(t[i], a[i]) for every item of `bytes` (a multiple of the item size): t the target's
// items, a the initiator's; o points at one operand item (used by the operand-taking operations).
void apply(ptl_op_t op, ptl_datatype_t type, std::byte *t, const std::byte *a, const std::byte *o, size_t bytes);

} // namespace portico::engine::atomics
