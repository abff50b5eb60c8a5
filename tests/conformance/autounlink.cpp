// SPDX-License-Identifier: BSD-3-Clause
// Conformance: AUTO_UNLINK of a locally managed ME that several initiators fill at once (spec
// §3.12.1 min_free, §3.13.1 "A PTL_EVENT_AUTO_UNLINK must be delivered after all PTL_EVENT_GET,
// PTL_EVENT_PUT, ... events associated with the list entry", §2.7 message order), with several
// initiators.
//
// Runs with three or more ranks: rank 0 is the target, every other rank an initiator. The
// initiators' large puts are in flight together, so on a transport that streams a message in
// frames (TCP; shared memory when PORTICO_SHM_SINGLE_COPY_BYTES is above the message sizes) the
// payloads of messages from different initiators interleave at the target. The message that
// makes the entry spent (min_free) may then complete while an earlier-matched message from
// another initiator is still streaming into the entry; AUTO_UNLINK must wait for that one's PUT.
// Whether this overlap happens in a given round depends on scheduling; the assertions do not.
// Every barrier is executed by every rank.
#include <algorithm>
#include <map>
#include <string>

#include "ptl_helpers.hpp"

using namespace ptltest;

namespace {

class AutoUnlink : public PtlTest {};
constexpr ptl_pt_index_t kPt = 40;
constexpr ptl_match_bits_t kBits = 0xA11;
constexpr size_t kMsgs = 4;   // puts per initiator and round
constexpr size_t kRounds = 6; // fresh entries each round: more chances for the overlap
// Many frames each (64 KiB frames), not multiples of a frame. None is shorter than 32 KiB, so on
// shared memory with default settings they go single copy (no streaming), except the first ones
// on a link that is still being set up (seen in round 0).
constexpr ptl_size_t kSizes[] = {1024 * 1024, 640 * 1024 + 3, 256 * 1024 + 1000, 1024 * 1024 - 7, 384 * 1024 + 77};
constexpr ptl_size_t kMaxSize = 1024 * 1024;
void *const kManaged = tag(0xA1);
void *const kFallback = tag(0xA2);

ptl_size_t size_of(int rank, size_t i) { return kSizes[(static_cast<size_t>(rank) * 3 + i) % std::size(kSizes)]; }
// Where message i of `rank` starts in that initiator's source buffer (its messages back to back).
ptl_size_t src_offset_of(int rank, size_t i) {
    ptl_size_t off = 0;
    for (size_t j = 0; j < i; ++j) off += size_of(rank, j);
    return off;
}
uint32_t seed_of(int rank, size_t round) { return static_cast<uint32_t>(0x27000 + 100 * round + rank); }
ptl_hdr_data_t hdr_of(int rank, size_t i) { return (static_cast<ptl_hdr_data_t>(rank) << 16) | i; }

// Where a message was placed at the target.
struct Placed {
    int rank;
    size_t msg;
    ptl_size_t offset, length;
};

// Several initiators (§3.12.1 min_free, §3.13.1): a locally managed ME with
// min_free = the largest message takes whole messages, packed back to back from offset 0 in the
// order they matched, until its free space falls below min_free; then it unlinks itself and the
// rest go to the next ME. Exactly one AUTO_UNLINK, and it comes after the PUT event of every
// message that matched the entry, including messages from other initiators still streaming into
// it when another message made it spent. All messages arrive once, intact, in per-initiator order.
TEST_F(AutoUnlink, ComesAfterEveryPutOfInterleavedInitiators) {
    REQUIRE_RANKS(3);
    Ni ni = open_ni(kMatchingPhysical);
    const int n_init = nranks() - 1;
    ptl_size_t total = 0; // bytes sent to the target per round, by all initiators
    for (int r = 1; r < nranks(); ++r) total += src_offset_of(r, kMsgs);
    // Spent once more than half of the traffic is placed, after several messages; no message is
    // ever truncated (the free space of a linked entry is at least min_free = kMaxSize).
    const ptl_size_t min_free = kMaxSize;
    const ptl_size_t managed_len = total / 2 + min_free;

    ptl_handle_eq_t teq = PTL_INVALID_HANDLE, ieq = PTL_INVALID_HANDLE;
    ptl_handle_md_t md = PTL_INVALID_HANDLE;
    std::vector<uint8_t> managed, fallback, src;
    if (rank() == 0) {
        teq = make_eq(ni, 1024);
        make_pt(ni, teq, 0, kPt);
        managed.resize(managed_len);
        fallback.resize(total);
    } else {
        src.resize(src_offset_of(rank(), kMsgs));
        ieq = make_eq(ni, 1024);
    }

    for (size_t round = 0; round < kRounds; ++round) {
        SCOPED_TRACE("round " + std::to_string(round));
        ptl_handle_me_t hm = PTL_INVALID_HANDLE, hf = PTL_INVALID_HANDLE;
        if (rank() == 0) {
            std::fill(managed.begin(), managed.end(), 0);
            std::fill(fallback.begin(), fallback.end(), 0);
            ptl_me_t d = me_desc(managed.data(), managed.size(), PTL_ME_OP_PUT | PTL_ME_MANAGE_LOCAL, kBits);
            d.min_free = min_free;
            hm = append_me(ni, kPt, d, PTL_PRIORITY_LIST, kManaged, teq);
            // Catches what arrives after the first entry unlinked; never spent (min_free 0).
            hf = append_me(ni, kPt,
                           me_desc(fallback.data(), fallback.size(), PTL_ME_OP_PUT | PTL_ME_MANAGE_LOCAL, kBits),
                           PTL_PRIORITY_LIST, kFallback, teq);
        } else {
            fill_pattern(src.data(), src.size(), seed_of(rank(), round));
            md = bind_md(ni, src.data(), src.size(), ieq);
        }
        barrier();

        // Initiators: all puts at once, then every SEND and ACK; the offsets the ACKs report go
        // to the target, which compares them with where the PUT events say the data went.
        std::vector<ptl_size_t> acked(kMsgs, PTL_SIZE_MAX);
        if (rank() != 0) {
            for (size_t i = 0; i < kMsgs; ++i)
                ASSERT_PTL(PtlPut(md, src_offset_of(rank(), i), size_of(rank(), i), PTL_ACK_REQ, ni.id_of(0), kPt,
                                  kBits, 1000 + i, tag(i), hdr_of(rank(), i)));
            std::map<std::pair<int, size_t>, int> seen;
            for (size_t k = 0; k < 2 * kMsgs; ++k) {
                ptl_event_t ev = wait_event(ieq);
                const size_t i = reinterpret_cast<uintptr_t>(ev.user_ptr);
                ASSERT_LT(i, kMsgs) << describe(ev);
                ASSERT_EQ(1, (++seen[{ev.type, i}])) << "duplicate " << describe(ev);
                if (ev.type == PTL_EVENT_SEND) {
                    check_init_event(ev, {.type = PTL_EVENT_SEND, .user_ptr = tag(i), .mlength = size_of(rank(), i)});
                } else {
                    // Whole message (never truncated), in the priority list, at the offset used.
                    check_init_event(ev, {.type = PTL_EVENT_ACK,
                                          .user_ptr = tag(i),
                                          .mlength = size_of(rank(), i),
                                          .list = PTL_PRIORITY_LIST});
                    acked[i] = ev.remote_offset;
                }
            }
            EXPECT_PTL(PtlMDRelease(md));
        }
        const std::string mine(reinterpret_cast<const char *>(acked.data()), acked.size() * sizeof(ptl_size_t));
        const std::vector<std::string> all_acked = job().allgather(mine);

        if (rank() == 0) {
            // Every PUT and the one AUTO_UNLINK, in EQ order.
            std::vector<Placed> in_managed, in_fallback;
            std::map<std::pair<int, size_t>, int> arrived;
            size_t unlinks = 0, puts = 0;
            auto on_event = [&](const ptl_event_t &ev) {
                if (ev.type == PTL_EVENT_AUTO_UNLINK) {
                    check_entry_event(ev, PTL_EVENT_AUTO_UNLINK, kPt, kManaged);
                    ++unlinks;
                    EXPECT_EQ(1u, unlinks) << "a second AUTO_UNLINK: " << describe(ev);
                    return;
                }
                ASSERT_EQ(Kind{PTL_EVENT_PUT}, Kind{ev.type}) << describe(ev);
                ++puts;
                const int from = static_cast<int>(ev.hdr_data >> 16);
                const size_t i = ev.hdr_data & 0xFFFF;
                ASSERT_TRUE(from >= 1 && from < nranks() && i < kMsgs) << describe(ev);
                ASSERT_EQ(1, (++arrived[{from, i}])) << "message delivered twice: " << describe(ev);
                ASSERT_TRUE(ev.user_ptr == kManaged || ev.user_ptr == kFallback) << describe(ev);
                const bool in_m = ev.user_ptr == kManaged;
                // The rule under test (§3.13.1): no PUT of the entry after its AUTO_UNLINK.
                ASSERT_FALSE(in_m && unlinks > 0) << "PUT event of the managed ME after its AUTO_UNLINK (message " << i
                                                  << " of rank " << from << "): " << describe(ev);
                const uintptr_t base = reinterpret_cast<uintptr_t>(in_m ? managed.data() : fallback.data());
                const size_t cap = in_m ? managed.size() : fallback.size();
                const uintptr_t start = reinterpret_cast<uintptr_t>(ev.start);
                ASSERT_TRUE(start >= base && start - base <= cap) << "start outside the entry; " << describe(ev);
                const ptl_size_t off = start - base;
                const ptl_size_t len = size_of(from, i);
                // The event reports the requested (ignored) offset and the whole message.
                check_target_event(ev,
                                   {.type = PTL_EVENT_PUT,
                                    .initiator = from,
                                    .pt_index = kPt,
                                    .match_bits = kBits,
                                    .rlength = len,
                                    .mlength = len,
                                    .remote_offset = 1000 + i,
                                    .start = ev.start,
                                    .user_ptr = ev.user_ptr,
                                    .hdr_data = hdr_of(from, i)},
                                   ni);
                ASSERT_LE(off + len, cap) << describe(ev);
                (in_m ? in_managed : in_fallback).push_back({from, i, off, len});
            };
            const size_t n_msgs = static_cast<size_t>(n_init) * kMsgs;
            while (puts < n_msgs) on_event(wait_event(teq));
            // The AUTO_UNLINK (due: the traffic overfills the entry) may be raised just after the
            // last PUT it follows.
            if (unlinks == 0) on_event(wait_event(teq));
            EXPECT_EQ(1u, unlinks);

            // Local offsets (§3.12.1): each entry holds whole messages back to back from 0, in
            // matching order, so sorted by offset they tile a prefix of the entry.
            auto tile = [&](std::vector<Placed> &v, const char *which) -> ptl_size_t {
                std::sort(v.begin(), v.end(), [](const Placed &a, const Placed &b) { return a.offset < b.offset; });
                ptl_size_t next = 0;
                for (const Placed &p : v) {
                    EXPECT_EQ(next, p.offset) << which << ": message " << p.msg << " of rank " << p.rank
                                              << " is not right after the previous one (gap or overlap)";
                    next = p.offset + p.length;
                }
                return next;
            };
            const ptl_size_t used = tile(in_managed, "managed ME");
            const ptl_size_t spilled = tile(in_fallback, "fallback ME");
            ASSERT_FALSE(in_managed.empty());
            EXPECT_GE(in_managed.size(), 3u) << "the entry should take several messages before it is spent";
            EXPECT_EQ(total, used + spilled) << "bytes accounted across both entries";
            EXPECT_EQ(n_msgs, in_managed.size() + in_fallback.size());
            // min_free: linked (free >= min_free) before the last message placed, spent after it.
            const ptl_size_t before_last = used - in_managed.back().length;
            EXPECT_GE(managed_len - before_last, min_free) << "the entry took a message after it was spent";
            EXPECT_LT(managed_len - used, min_free) << "AUTO_UNLINK although free space >= min_free";

            // Message order per initiator (§2.7): each one's messages match in the order sent, so
            // the managed ME holds a prefix of them, at increasing offsets, and the fallback the rest.
            for (int r = 1; r < nranks(); ++r) {
                std::vector<Placed> seq;
                for (const auto *v : {&in_managed, &in_fallback})
                    for (const Placed &p : *v)
                        if (p.rank == r) seq.push_back(p);
                ASSERT_EQ(kMsgs, seq.size()) << "rank " << r;
                for (size_t k = 0; k < kMsgs; ++k) EXPECT_EQ(k, seq[k].msg) << "rank " << r << ": matched out of order";
            }

            // Payloads, and the ACK of every message reports the offset its PUT event shows.
            for (const auto *v : {&in_managed, &in_fallback}) {
                const uint8_t *base = v == &in_managed ? managed.data() : fallback.data();
                for (const Placed &p : *v) {
                    EXPECT_EQ(-1, check_pattern(base + p.offset, p.length, seed_of(p.rank, round),
                                                src_offset_of(p.rank, p.msg)))
                        << "payload of message " << p.msg << " of rank " << p.rank << " at offset " << p.offset
                        << (v == &in_managed ? " of the managed ME" : " of the fallback ME");
                    ptl_size_t ack_off;
                    std::memcpy(&ack_off, all_acked.at(static_cast<size_t>(p.rank)).data() + p.msg * sizeof ack_off,
                                sizeof ack_off);
                    EXPECT_EQ(p.offset, ack_off) << "ACK remote_offset of message " << p.msg << " of rank " << p.rank;
                }
            }
            // The spent entry's handle died with its AUTO_UNLINK; the other is still linked.
            EXPECT_RC(PTL_ARG_INVALID, PtlMEUnlink(hm));
            EXPECT_PTL(PtlMEUnlink(hf));
        }
        barrier();
        if (rank() == 0) expect_eq_empty(teq, "after the round");
    }
}

} // namespace

int main(int argc, char **argv) { return portico::test::run_all_tests(argc, argv); }
