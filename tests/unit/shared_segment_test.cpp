// SPDX-License-Identifier: BSD-3-Clause
// Shared segments (portico_ext.h) through the public API, with a second process: what one writes
// the other reads, ids that do not belong are refused, and the argument checks.
#include <gtest/gtest.h>

#include <portals4.h>
#include <portico_ext.h>

#include <cerrno>
#include <cstring>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

const size_t kPage = static_cast<size_t>(sysconf(_SC_PAGESIZE));

TEST(SharedSegment, AnotherProcessSeesWhatTheOwnerWroteAndTheOwnerSeesItsAnswer) {
    void *base = nullptr;
    portico_segment_t seg;
    ASSERT_EQ(PTL_OK, portico_segment_create(4 * kPage, nullptr, &base, &seg));
    auto *words = static_cast<volatile uint64_t *>(base);
    words[0] = 0x1122334455667788ull;
    const pid_t child = fork();
    if (child == 0) {
        // The child attaches the id as any other process of the machine would (it also has the
        // mapping it inherited; the attached one is a second, independent mapping).
        void *mine = nullptr;
        if (portico_segment_attach(&seg, &mine) != PTL_OK) _exit(2);
        auto *w = static_cast<volatile uint64_t *>(mine);
        if (w[0] != 0x1122334455667788ull) _exit(3);
        w[4 * kPage / 8 - 1] = 42; // the last word of the last page
        if (portico_segment_detach(mine, &seg) != PTL_OK) _exit(4);
        if (portico_segment_detach(mine, &seg) != PTL_ARG_INVALID) _exit(5); // not attached any more
        _exit(0);
    }
    int status = 0;
    ASSERT_EQ(child, waitpid(child, &status, 0));
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(0, WEXITSTATUS(status));
    EXPECT_EQ(42u, words[4 * kPage / 8 - 1]);
    EXPECT_EQ(PTL_OK, portico_segment_destroy(base, &seg));
}

TEST(SharedSegment, ADestroyedSegmentNoLongerAttaches) {
    void *base = nullptr;
    portico_segment_t seg;
    ASSERT_EQ(PTL_OK, portico_segment_create(kPage, nullptr, &base, &seg));
    ASSERT_EQ(PTL_OK, portico_segment_destroy(base, &seg));
    void *again = nullptr;
    EXPECT_EQ(PTL_FAIL, portico_segment_attach(&seg, &again));
    EXPECT_EQ(PTL_ARG_INVALID, portico_segment_destroy(base, &seg)); // destroyed once already
}

TEST(SharedSegment, AnIdThatIsNotASegmentIsRefused) {
    void *base = nullptr;
    portico_segment_t seg;
    ASSERT_EQ(PTL_OK, portico_segment_create(kPage, nullptr, &base, &seg));
    portico_segment_t forged = seg;
    forged.opaque[1] ^= 1; // another inode: what a recycled descriptor number would show
    void *p = nullptr;
    EXPECT_EQ(PTL_FAIL, portico_segment_attach(&forged, &p));
    portico_segment_t zero{};
    EXPECT_EQ(PTL_FAIL, portico_segment_attach(&zero, &p));
    portico_segment_t elsewhere = seg;
    elsewhere.opaque[3] ^= 1; // another machine's boot: the same pid, descriptor and inode mean nothing here
    EXPECT_EQ(PTL_FAIL, portico_segment_attach(&elsewhere, &p));
    EXPECT_EQ(PTL_ARG_INVALID, portico_segment_destroy(base, &forged));
    EXPECT_EQ(PTL_OK, portico_segment_destroy(base, &seg));
}

TEST(SharedSegment, NobodyCanShrinkASegment) {
    // A copy from a mapping past the end of its file dies of SIGBUS: a peer that shrank its
    // segment could kill the processes that attached it. The segment is sealed instead (the id
    // holds the owner's descriptor number: white-box, the layout is common/shared_segment.hpp's).
    void *base = nullptr;
    portico_segment_t seg;
    ASSERT_EQ(PTL_OK, portico_segment_create(2 * kPage, nullptr, &base, &seg));
    const int fd = static_cast<int>(seg.opaque[0] >> 32);
    EXPECT_NE(0, ftruncate(fd, static_cast<off_t>(kPage)));
    EXPECT_EQ(EPERM, errno);
    EXPECT_EQ(PTL_OK, portico_segment_destroy(base, &seg));
}

TEST(SharedSegment, TheHintIsTakenWhenFree) {
    // A free range: reserve one, release it, ask for it.
    void *probe = mmap(nullptr, 2 * kPage, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(MAP_FAILED, probe);
    munmap(probe, 2 * kPage);
    void *base = nullptr;
    portico_segment_t seg;
    ASSERT_EQ(PTL_OK, portico_segment_create(2 * kPage, probe, &base, &seg));
    EXPECT_EQ(probe, base);
    EXPECT_EQ(PTL_OK, portico_segment_destroy(base, &seg));
}

TEST(SharedSegment, ArgumentChecks) {
    void *p = nullptr;
    portico_segment_t seg;
    EXPECT_EQ(PTL_ARG_INVALID, portico_segment_create(0, nullptr, &p, &seg));
    EXPECT_EQ(PTL_ARG_INVALID, portico_segment_create(kPage + 1, nullptr, &p, &seg));
    EXPECT_EQ(PTL_ARG_INVALID, portico_segment_create(kPage, nullptr, nullptr, &seg));
    EXPECT_EQ(PTL_ARG_INVALID, portico_segment_create(kPage, nullptr, &p, nullptr));
    EXPECT_EQ(PTL_ARG_INVALID, portico_segment_attach(nullptr, &p));
    EXPECT_EQ(PTL_ARG_INVALID, portico_segment_attach(&seg, nullptr));
    EXPECT_EQ(PTL_ARG_INVALID, portico_segment_detach(nullptr, &seg));
    EXPECT_EQ(PTL_ARG_INVALID, portico_segment_destroy(nullptr, &seg));
    int local = 0;
    EXPECT_EQ(PTL_ARG_INVALID, portico_segment_detach(&local, &seg)); // not an attached segment
}

} // namespace
