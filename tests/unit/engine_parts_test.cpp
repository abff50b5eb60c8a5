// SPDX-License-Identifier: BSD-3-Clause
// Pieces of the engine that need no peer: handles, the fault guard, header validation.
#include <cstring>
#include <gtest/gtest.h>
#include <random>
#include <string>
#include <mutex>
#include <thread>

#include <sys/mman.h>
#include <unistd.h>

#include <vector>

#include "common/futex_mutex.hpp"
#include "common/guarded_copy.hpp"
#include "engine/handles.hpp"
#include "transport/transport.hpp"
#include "wire/protocol.hpp"

using namespace portico;

TEST(Handles, StaleHandleIsRejectedAfterReuse) {
    engine::HandleTable<int> t;
    int a = 1, b = 2;
    ptl_handle_any_t ha = t.insert(engine::ObjType::MD, &a);
    EXPECT_EQ(&a, t.lookup(engine::ObjType::MD, ha));
    EXPECT_EQ(nullptr, t.lookup(engine::ObjType::ME, ha)); // wrong type
    t.remove(ha);
    ptl_handle_any_t hb = t.insert(engine::ObjType::MD, &b); // same slot, next generation
    EXPECT_EQ(engine::handle_slot(ha), engine::handle_slot(hb));
    EXPECT_NE(ha, hb);
    EXPECT_EQ(nullptr, t.lookup(engine::ObjType::MD, ha));
    EXPECT_EQ(&b, t.lookup(engine::ObjType::MD, hb));
}

TEST(Handles, NoneHandlesNeverNameAnObject) {
    engine::HandleTable<int> t;
    int a = 1;
    t.insert(engine::ObjType::EQ, &a);
    t.insert(engine::ObjType::CT, &a);
    EXPECT_EQ(nullptr, t.lookup(engine::ObjType::EQ, PTL_EQ_NONE));
    EXPECT_EQ(nullptr, t.lookup(engine::ObjType::CT, PTL_CT_NONE));
    EXPECT_EQ(nullptr, t.lookup(engine::ObjType::EQ, PTL_INVALID_HANDLE));
}

TEST(Handles, SlotsAcrossChunkBoundariesKeepTheirObjects) {
    // Chunks of 1024, 2048, 4096, ... slots: 8000 objects span four of them.
    engine::HandleTable<int> t;
    std::vector<int> objs(8000);
    std::vector<ptl_handle_any_t> hs;
    for (int &o : objs) hs.push_back(t.insert(engine::ObjType::MD, &o));
    for (size_t i = 0; i < objs.size(); ++i) {
        ASSERT_EQ(i, engine::handle_slot(hs[i]));
        ASSERT_EQ(&objs[i], t.lookup(engine::ObjType::MD, hs[i])) << "slot " << i;
    }
    for (size_t i : {1023u, 1024u, 3071u, 3072u, 7167u}) {
        t.remove(hs[i]);
        EXPECT_EQ(nullptr, t.lookup(engine::ObjType::MD, hs[i]));
    }
    size_t live = 0;
    t.for_each([&](int *) { ++live; });
    EXPECT_EQ(objs.size() - 5, live);
    int extra = 0;
    const ptl_handle_any_t reused = t.insert(engine::ObjType::MD, &extra);
    EXPECT_EQ(&extra, t.lookup(engine::ObjType::MD, reused));
    EXPECT_EQ(nullptr,
              t.lookup(engine::ObjType::MD, engine::make_handle(engine::ObjType::MD, 1, 9000))); // never issued
}

TEST(GuardedCopy, FaultBecomesFalseNotACrash) {
    install_fault_guard();
    const long page = sysconf(_SC_PAGESIZE);
    void *hole = mmap(nullptr, static_cast<size_t>(page), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(MAP_FAILED, hole);
    char buf[64] = {};
    EXPECT_FALSE(guarded_copy(buf, hole, sizeof buf));
    EXPECT_FALSE(guarded_copy(hole, buf, sizeof buf));
    const char src[] = "still works";
    EXPECT_TRUE(guarded_copy(buf, src, sizeof src));
    EXPECT_STREQ("still works", buf);
    munmap(hole, static_cast<size_t>(page));
}

// Every size, small (guarded by where it faults) and large (by sigsetjmp), faulting at the first
// byte or in the middle (a range that runs from a mapped page into an unmapped one), in either
// direction; and the same copies within the mapped page succeed byte for byte.
TEST(GuardedCopy, EverySizeFaultsAtTheBoundaryAndCopiesBeforeIt) {
    install_fault_guard();
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    auto *two =
        static_cast<char *>(mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    ASSERT_NE(MAP_FAILED, static_cast<void *>(two));
    ASSERT_EQ(0, mprotect(two + page, page, PROT_NONE));
    std::vector<char> src(2 * page), dst(2 * page);
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<char>(i * 7 + 1);
    for (size_t n :
         {size_t{1}, size_t{7}, size_t{8}, size_t{9}, size_t{255}, size_t{256}, size_t{257}, size_t{1000}, page}) {
        SCOPED_TRACE("n = " + std::to_string(n));
        char *tail = two + page - n; // n mapped bytes just before the hole
        EXPECT_TRUE(guarded_copy(tail, src.data(), n));
        EXPECT_EQ(0, std::memcmp(tail, src.data(), n));
        EXPECT_TRUE(guarded_copy(dst.data(), tail, n));
        EXPECT_EQ(0, std::memcmp(dst.data(), src.data(), n));
        EXPECT_FALSE(guarded_copy(tail + 1, src.data(), n)); // the last byte is in the hole
        EXPECT_FALSE(guarded_copy(dst.data(), tail + 1, n));
        EXPECT_FALSE(guarded_copy(two + page, src.data(), n)); // the first byte is
        EXPECT_FALSE(guarded_copy(dst.data(), two + page, n));
    }
    munmap(two, 2 * page);
}

TEST(FrameHeader, InsaneFrameHeadersAreRejected) {
    transport::FrameHeader first{};
    first.t.protocol = transport::Protocol::Portals;
    transport::FrameHeader h = transport::frame_header(first, 16, 0, 16);
    EXPECT_EQ(transport::kFrameFirst, h.t.flags);
    EXPECT_TRUE(transport::frame_is_sane(h, 16));
    EXPECT_FALSE(transport::frame_is_sane(h, 15)); // claims more payload than the frame holds
    h.t.payload_total = 8;
    EXPECT_FALSE(transport::frame_is_sane(h, 16)); // a frame larger than its message
    h.t.payload_total = 16;
    h.t.version = 99;
    EXPECT_FALSE(transport::frame_is_sane(h, 16));
    h.t.version = transport::kFrameVersion;
    h.t.flags |= 0x40; // no such flag
    EXPECT_FALSE(transport::frame_is_sane(h, 16));
    h.t.flags = transport::kFrameFirst;
    h.t.protocol_bytes = transport::kProtocolHeaderBytes + 1; // more than a protocol header can be
    EXPECT_FALSE(transport::frame_is_sane(h, 16));
    // A continuation frame carries no total and no protocol header.
    h.t.protocol_bytes = 24;
    transport::FrameHeader next = transport::frame_header(h, 100, 1, 50);
    EXPECT_EQ(0, next.t.flags);
    EXPECT_EQ(transport::Protocol::Portals, next.t.protocol);
    EXPECT_EQ(0, next.t.protocol_bytes);
    EXPECT_EQ(sizeof(transport::TransportHeader), transport::wire_header_bytes(next));
    EXPECT_TRUE(transport::frame_is_sane(next, 50));
    next.t.protocol_bytes = 8;
    EXPECT_FALSE(transport::frame_is_sane(next, 50)) << "a continuation frame with a protocol header";
}

TEST(FrameHeader, TheWireFormCarriesOnlyTheProtocolBytesInUse) {
    transport::FrameHeader first{};
    first.t.protocol = transport::Protocol::Portals;
    first.t.protocol_bytes = 24;
    for (int i = 0; i < 24; ++i) first.protocol[i] = std::byte(i + 1);
    const transport::FrameHeader h = transport::frame_header(first, 8, 0, 8);
    std::byte wire_form[transport::kMaxWireHeaderBytes + 8];
    transport::write_wire_header(wire_form, h);
    transport::FrameHeader back;
    EXPECT_EQ(0u, transport::read_wire_header(wire_form, 16 + 23, &back)) << "cut short";
    ASSERT_EQ(16u + 24, transport::read_wire_header(wire_form, sizeof wire_form, &back));
    EXPECT_EQ(0, std::memcmp(&h, &back, 16 + 24));
    std::byte huge[transport::kMaxWireHeaderBytes + 8] = {};
    std::memcpy(huge, wire_form, 16);
    huge[3] = std::byte{transport::kProtocolHeaderBytes + 1};
    EXPECT_EQ(0u, transport::read_wire_header(huge, sizeof huge, &back)) << "a protocol header too long";
}

// A header whose every field is set, to see each travel.
wire::Header full_header(uint64_t seed) {
    std::mt19937_64 rng(seed);
    wire::Header h{};
    h.kind = wire::Kind::FetchAtomic;
    h.ni_kind = 3;
    h.flags = static_cast<uint8_t>(rng());
    h.ack_req = 1;
    h.ni_fail = 2;
    h.list = 1;
    h.atomic_op = 7;
    h.atomic_type = 9;
    h.pt_index = static_cast<uint32_t>(rng());
    h.uid = static_cast<uint32_t>(rng());
    h.src_rank = static_cast<uint32_t>(rng());
    h.match_bits_hi = rng();
    h.match_bits = rng();
    h.hdr_data = rng();
    h.remote_offset = rng();
    h.length = rng();
    h.cookie = rng();
    h.rdv_addr = rng();
    return h;
}

TEST(WireHeader, EncodingKeepsEveryFieldButTheSendersIdWhichTheLinkGives) {
    for (uint64_t seed = 1; seed <= 20; ++seed) {
        wire::Header h = full_header(seed);
        h.src_nid = 0x0a000001;
        h.src_pid = 77;
        std::byte out[wire::kMaxEncodedBytes];
        const size_t n = wire::encode(h, out);
        EXPECT_EQ(wire::kMaxEncodedBytes, n);
        wire::Header back;
        ASSERT_TRUE(wire::decode(out, n, &back));
        h.src_nid = h.src_pid = 0; // not on the wire
        EXPECT_EQ(0, std::memcmp(&h, &back, sizeof h)) << "seed " << seed;
    }
}

TEST(WireHeader, ZeroFieldsCostNothingSoASmallPutFitsOneCacheLine) {
    wire::Header put{};
    put.kind = wire::Kind::Put;
    put.ni_kind = wire::kNiMatching;
    put.uid = 1000;
    put.length = 8;
    std::byte out[wire::kMaxEncodedBytes];
    const size_t n = wire::encode(put, out);
    EXPECT_EQ(32u, n); // lead, small (ni_kind), ids (uid), length
    // The shared-memory ring's record prefix, the transport's header, this and 8 bytes of payload.
    EXPECT_LE(8 + sizeof(transport::TransportHeader) + n + 8, 64u);
    wire::Header back;
    ASSERT_TRUE(wire::decode(out, n, &back));
    EXPECT_EQ(0, std::memcmp(&put, &back, sizeof put));
    wire::Header bare{};
    bare.kind = wire::Kind::Get;
    EXPECT_EQ(sizeof(wire::EncodedLead), wire::encode(bare, out));
}

TEST(WireHeader, DecodingRejectsWhatNoEncoderWrites) {
    const wire::Header h = full_header(3);
    std::byte out[wire::kMaxEncodedBytes + 8] = {};
    const size_t n = wire::encode(h, out);
    wire::Header back;
    EXPECT_FALSE(wire::decode(out, n - 8, &back)) << "fewer words than announced";
    EXPECT_FALSE(wire::decode(out, n + 8, &back)) << "more bytes than announced";
    EXPECT_FALSE(wire::decode(out, 7, &back)) << "shorter than the lead";
    std::byte bad[wire::kMaxEncodedBytes + 8];
    std::memcpy(bad, out, sizeof bad);
    bad[3] = std::byte{0x80}; // present bit 15: no such word
    EXPECT_FALSE(wire::decode(bad, n, &back));
    for (size_t lead_byte : {0, 2}) { // the small word's bytes of kind and flags, which the lead carries
        std::memcpy(bad, out, sizeof bad);
        bad[8 + lead_byte] = std::byte{1};
        EXPECT_FALSE(wire::decode(bad, n, &back)) << lead_byte;
    }
}

TEST(WireHeader, OnlyKnownKindsAreSane) {
    wire::Header h{};
    for (auto k : {wire::Kind::Put, wire::Kind::Get, wire::Kind::Ack, wire::Kind::Reply, wire::Kind::Atomic,
                   wire::Kind::FetchAtomic}) {
        h.kind = k;
        EXPECT_TRUE(wire::header_is_sane(h));
    }
    for (int k : {0, 5, 8, 255}) {
        h.kind = static_cast<wire::Kind>(k);
        EXPECT_FALSE(wire::header_is_sane(h)) << k;
    }
}

TEST(FutexMutex, TryLockFailsWhileHeldAndSucceedsAfter) {
    FutexMutex m;
    ASSERT_TRUE(m.try_lock());
    EXPECT_FALSE(m.try_lock());
    m.unlock();
    EXPECT_TRUE(m.try_lock());
    m.unlock();
}

TEST(FutexMutex, ThreadsThatSleepOnItAllGetInAndNoIncrementIsLost) {
    // More threads than cores and long sections: takers run out of spins and sleep on the futex,
    // so every unlock that finds sleepers must wake one, or the test hangs (ctest's timeout).
    FutexMutex m;
    uint64_t counter = 0; // plain: only the lock orders the increments
    constexpr int kThreads = 6, kRounds = 20000;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&] {
            for (int i = 0; i < kRounds; ++i) {
                std::lock_guard g(m);
                const uint64_t seen = counter;
                if (i % 64 == 0) std::this_thread::yield(); // a holder descheduled in its section
                counter = seen + 1;
            }
        });
    for (auto &th : threads) th.join();
    EXPECT_EQ(counter, uint64_t(kThreads) * kRounds);
}
