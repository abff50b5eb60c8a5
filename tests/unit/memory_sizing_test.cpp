// SPDX-License-Identifier: BSD-3-Clause
// The rules that keep memory per rank bounded when many processes of a job share a machine
// (docs/PERFORMANCE.md, *Memory per rank*): shared-memory rings sized by the processes on the
// machine (transport/shm/sizing.hpp), GASNet's active-message credits sized by the number of nodes
// (gasnet/sizing.hpp), and what the launchers say about the machine's share of the job
// (bootstrap/local_hint.hpp).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "bootstrap/local_hint.hpp"
#include "gasnet/sizing.hpp"
#include "transport/shm/sizing.hpp"

namespace {

namespace shm = portico::transport::shm::sizing;
namespace gas = gasnetp::sizing;

constexpr uint64_t KiB = 1024, MiB = 1024 * KiB, GiB = 1024 * MiB;

TEST(ShmRingSizing, SmallJobsKeepTheLargestRings) {
    for (uint64_t local : {0, 1, 2, 8, 32})
        EXPECT_EQ(256 * KiB, shm::ring_bytes(shm::link_budget(shm::kDefaultLinkMemory, 24 * GiB, local), local))
            << local;
}

TEST(ShmRingSizing, RingsShrinkSoThatAProcessKeepsItsBudget) {
    const uint64_t budget = shm::kDefaultLinkMemory;
    EXPECT_EQ(128 * KiB, shm::ring_bytes(budget, 64));
    EXPECT_EQ(32 * KiB, shm::ring_bytes(budget, 256));
    EXPECT_EQ(8 * KiB, shm::ring_bytes(budget, 1024));
    for (uint64_t local = 2; local <= 4096; ++local) {
        const uint64_t ring = shm::ring_bytes(budget, local);
        EXPECT_EQ(0u, ring & (ring - 1)) << local;
        EXPECT_GE(ring, shm::kMinRingBytes) << local;
        EXPECT_LE(ring, shm::kMaxRingBytes) << local;
        // Every peer a link of full rings: within the budget, unless the smallest ring is reached.
        if (ring > shm::kMinRingBytes) {
            EXPECT_LE(shm::process_link_bytes(ring, local), budget) << local;
        }
    }
}

TEST(ShmRingSizing, TheMachineBoundsTheBudget) {
    // 1024 processes on 24 GiB: an eighth of it is 3 MiB each, so the rings are the smallest.
    EXPECT_EQ(3 * MiB, shm::link_budget(shm::kDefaultLinkMemory, 24 * GiB, 1024));
    EXPECT_EQ(shm::kMinRingBytes, shm::ring_bytes(shm::link_budget(shm::kDefaultLinkMemory, 24 * GiB, 1024), 1024));
    // A big machine leaves the setting in charge; an unknown machine size too.
    EXPECT_EQ(shm::kDefaultLinkMemory, shm::link_budget(shm::kDefaultLinkMemory, 1024 * GiB, 1024));
    EXPECT_EQ(shm::kDefaultLinkMemory, shm::link_budget(shm::kDefaultLinkMemory, 0, 1024));
    // 64 processes on a 2 GiB machine: 4 MiB each.
    EXPECT_EQ(64 * KiB, shm::ring_bytes(shm::link_budget(shm::kDefaultLinkMemory, 2 * GiB, 64), 64));
}

TEST(ShmRingSizing, AMessageLargerThanHalfTheRingGoesSingleCopy) {
    // Small jobs keep the setting's 32 KiB; many processes per machine send less through the rings.
    EXPECT_EQ(32 * KiB, shm::single_copy_from(32 * KiB, shm::kMaxRingBytes));
    EXPECT_EQ(32 * KiB, shm::single_copy_from(32 * KiB, 64 * KiB));
    EXPECT_EQ(16 * KiB, shm::single_copy_from(32 * KiB, 32 * KiB));
    EXPECT_EQ(2 * KiB, shm::single_copy_from(32 * KiB, shm::kMinRingBytes));
    // A message of half the ring fits beside the frames already there: a turn of the consumer
    // at the most.
    for (uint64_t ring = shm::kMinRingBytes; ring <= shm::kMaxRingBytes; ring *= 2)
        EXPECT_LE(shm::single_copy_from(32 * KiB, ring), ring / 2) << ring;
}

TEST(ShmRingSizing, TheSmallestRingStillCarriesFramesAndAtomics) {
    const size_t frame = shm::frame_payload(shm::kMinRingBytes, 96, 64);
    EXPECT_EQ(864u, frame);
    EXPECT_GE(frame, 64u); // an atomic of 32 bytes and its operand
    EXPECT_EQ(64 * KiB - 160, shm::frame_payload(shm::kMaxRingBytes, 96, 64));
}

TEST(GasnetCreditSizing, UpToEightNodesKeepTheFullCredit) {
    for (uint64_t nodes : {1, 2, 4, 8}) {
        EXPECT_EQ(256 * KiB, gas::credit_bytes(nodes, gas::kDefaultZoneBytes, 0)) << nodes;
        EXPECT_EQ(gas::kMaxMessage, gas::eager_bytes(gas::credit_bytes(nodes, gas::kDefaultZoneBytes, 0)));
    }
}

TEST(GasnetCreditSizing, TheZoneStaysAtItsBudgetAsNodesGrow) {
    EXPECT_EQ(32 * KiB, gas::credit_bytes(64, gas::kDefaultZoneBytes, 0));
    EXPECT_EQ(8 * KiB, gas::credit_bytes(256, gas::kDefaultZoneBytes, 0));
    EXPECT_EQ(2 * KiB, gas::credit_bytes(1024, gas::kDefaultZoneBytes, 0));
    EXPECT_EQ(gas::kMinCredit, gas::credit_bytes(4096, gas::kDefaultZoneBytes, 0));
    for (uint64_t nodes = 8; nodes <= 2048; ++nodes) {
        const uint64_t credit = gas::credit_bytes(nodes, gas::kDefaultZoneBytes, 0);
        EXPECT_LE(nodes * credit, gas::kDefaultZoneBytes) << nodes;
        EXPECT_GT(2 * nodes * credit, gas::kDefaultZoneBytes) << nodes; // and not much below it
        const uint64_t eager = gas::eager_bytes(credit);
        EXPECT_EQ(0u, eager % 16);
        EXPECT_LE(2 * eager, credit); // a sender owed half its credit can still send one
        EXPECT_GE(eager, 512u);       // room for 16 arguments, a part header and some payload
        EXPECT_GE(gas::buffer_bytes(nodes, credit, 0), 4 * eager);
    }
}

TEST(GasnetCreditSizing, WhatTheUserAsksForIsKeptWithinBounds) {
    EXPECT_EQ(256 * KiB, gas::credit_bytes(1024, gas::kDefaultZoneBytes, 256 * KiB));
    EXPECT_EQ(gas::kMinCredit, gas::credit_bytes(2, gas::kDefaultZoneBytes, 10));
    EXPECT_EQ(16 * KiB, gas::credit_bytes(2, gas::kDefaultZoneBytes, 16 * KiB)); // smaller than the default, too
    EXPECT_EQ(8 * KiB, gas::credit_bytes(2, 16 * KiB, 0));                       // a zone of 16 KiB for 2 nodes
    EXPECT_EQ(4 * MiB, gas::buffer_bytes(2, 256 * KiB, 4 * MiB));
    // 256 nodes with the old fixed credit: the 128 MiB zones the warning names.
    EXPECT_GT(gas::zones_bytes(256, 256 * KiB, gas::buffer_bytes(256, 256 * KiB, 0)), 128 * MiB);
}

// Sets a variable for the scope of the object.
class Env {
public:
    Env(const char *name, const char *value) : name_(name) {
        if (const char *old = std::getenv(name)) old_ = old, had_ = true;
        if (value)
            setenv(name, value, 1);
        else
            unsetenv(name);
    }
    ~Env() {
        if (had_)
            setenv(name_.c_str(), old_.c_str(), 1);
        else
            unsetenv(name_.c_str());
    }
    Env(const Env &) = delete;
    Env &operator=(const Env &) = delete;

private:
    std::string name_, old_;
    bool had_ = false;
};

TEST(LocalHint, SlurmTaskCountsPerNode) {
    using portico::bootstrap::slurm_tasks_on_node;
    EXPECT_EQ(4u, slurm_tasks_on_node("4(x2),3", 0));
    EXPECT_EQ(4u, slurm_tasks_on_node("4(x2),3", 1));
    EXPECT_EQ(3u, slurm_tasks_on_node("4(x2),3", 2));
    EXPECT_EQ(0u, slurm_tasks_on_node("4(x2),3", 3));
    EXPECT_EQ(16u, slurm_tasks_on_node("16", 0));
    EXPECT_EQ(0u, slurm_tasks_on_node("4(x2", 0));
    EXPECT_EQ(0u, slurm_tasks_on_node("x", 0));
    EXPECT_EQ(0u, slurm_tasks_on_node(nullptr, 0));
}

TEST(LocalHint, FromTheLaunchersEnvironment) {
    Env a("PORTICO_LOCAL_SIZE", nullptr), b("PORTICO_LOCAL_RANK", nullptr), c("MPI_LOCALNRANKS", nullptr),
        d("MPI_LOCALRANKID", nullptr), e("OMPI_COMM_WORLD_LOCAL_SIZE", nullptr),
        f("OMPI_COMM_WORLD_LOCAL_RANK", nullptr), g("SLURM_NODEID", nullptr), h("SLURM_STEP_TASKS_PER_NODE", nullptr),
        i("SLURM_LOCALID", nullptr);
    EXPECT_EQ(0u, portico::bootstrap::local_hint().processes);
    EXPECT_EQ(-1, portico::bootstrap::local_hint().rank);
    {
        Env s("SLURM_NODEID", "1"), t("SLURM_STEP_TASKS_PER_NODE", "2,5"), l("SLURM_LOCALID", "3");
        EXPECT_EQ(5u, portico::bootstrap::local_hint().processes);
        EXPECT_EQ(3, portico::bootstrap::local_hint().rank);
        Env o("OMPI_COMM_WORLD_LOCAL_SIZE", "6"), r("OMPI_COMM_WORLD_LOCAL_RANK", "2");
        EXPECT_EQ(6u, portico::bootstrap::local_hint().processes);
        EXPECT_EQ(2, portico::bootstrap::local_hint().rank);
        Env m("MPI_LOCALNRANKS", "7"), k("MPI_LOCALRANKID", "0");
        EXPECT_EQ(7u, portico::bootstrap::local_hint().processes);
        EXPECT_EQ(0, portico::bootstrap::local_hint().rank);
        Env p("PORTICO_LOCAL_SIZE", "8"), q("PORTICO_LOCAL_RANK", "5");
        EXPECT_EQ(8u, portico::bootstrap::local_hint().processes); // portico-run's first
        EXPECT_EQ(5, portico::bootstrap::local_hint().rank);
    }
    Env bad("MPI_LOCALNRANKS", "many");
    EXPECT_EQ(0u, portico::bootstrap::local_hint().processes);
}

} // namespace
