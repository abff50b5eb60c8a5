// Pieces of the engine that need no peer: handles, the fault guard, header validation.
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <vector>

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
    // A continuation frame carries no total and the protocol's header area is zero.
    const transport::FrameHeader next = transport::frame_header(h, 100, 1, 50);
    EXPECT_EQ(0, next.t.flags);
    EXPECT_EQ(transport::Protocol::Portals, next.t.protocol);
    EXPECT_TRUE(transport::frame_is_sane(next, 50));
    EXPECT_EQ(std::byte{0}, next.protocol[0]);
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
