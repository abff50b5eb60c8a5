// Pieces of the engine that need no peer: handles, the fault guard, header validation.
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include "common/guarded_copy.hpp"
#include "engine/handles.hpp"
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

TEST(WireHeader, InsaneHeadersAreRejected) {
    wire::Header h{};
    h.version = wire::kVersion;
    h.kind = wire::Kind::Put;
    h.frame_payload = 16;
    h.payload_total = 16;
    EXPECT_TRUE(wire::header_is_sane(h, 16));
    EXPECT_FALSE(wire::header_is_sane(h, 15)); // claims more payload than the frame holds
    h.payload_total = 8;
    EXPECT_FALSE(wire::header_is_sane(h, 16)); // a frame larger than its message
    h.payload_total = 16;
    h.version = 99;
    EXPECT_FALSE(wire::header_is_sane(h, 16));
    h.version = wire::kVersion;
    h.kind = static_cast<wire::Kind>(42);
    EXPECT_FALSE(wire::header_is_sane(h, 16));
}
