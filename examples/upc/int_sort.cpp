// SPDX-License-Identifier: BSD-3-Clause
// A parallel integer sort in Portico's C++ UPC front end (docs/UPC.md shows the UPC original line
// by line beside it): a bucket sort, the top digit of each key picking its bucket, one bucket per
// thread, and the keys moved to their buckets by one all-to-all, upc_all_exchange.
//
// Thread i puts the keys of bucket j in slot j of its send array (KEYS keys of room: all its keys
// could fall in one bucket) and the count in send_count; two exchanges give thread j slot j of
// every thread. Each thread sorts its bucket locally; buckets are in key order, so the whole is
// sorted. The check: every bucket sorted, each bucket's keys above the previous one's, and the
// count and an order-independent checksum of the keys (summed with upc_all_reduceUL) unchanged.
// Build: c++ -std=c++20 int_sort.cpp $(pkg-config --cflags --libs portico-upc)
// Run:   portico-run -n 4 ./upc_int_sort [seed]
#include <portico/upc.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace upc = portico::upc;

constexpr int KEYS = 4096;      // keys per thread
constexpr int MAXKEY = 1 << 20; // keys are 0 .. MAXKEY - 1

static unsigned long mix(unsigned long x) { // splitmix64's finaliser: a checksum term per key
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9UL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebUL;
    return x ^ (x >> 31);
}

int main(int argc, char **argv) {
    upc::runtime job(argc, argv);
    const unsigned long seed = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 1;
    const int me = upc::mythread(), nthreads = upc::threads();

    upc::shared_array<int, KEYS> send(nthreads * nthreads * KEYS), recv(nthreads * nthreads * KEYS);
    upc::shared_array<int> send_count(nthreads * nthreads), recv_count(nthreads * nthreads);
    upc::shared_array<unsigned long> sums(nthreads);
    upc::shared_array<int> lo(nthreads), hi(nthreads), count(nthreads);
    upc::shared_var<unsigned long> before, after;

    // My keys, and their checksum.
    std::vector<int> keys(KEYS);
    unsigned long state = 0x9E3779B97F4A7C15UL ^ (seed * 1000003UL + static_cast<unsigned long>(me));
    unsigned long sum = 0;
    for (int &k : keys) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        k = static_cast<int>(state % MAXKEY);
        sum += mix(static_cast<unsigned long>(k));
    }
    sums[me] = sum;
    upc::reduce(before, sums, upc::op::add, nthreads);

    // Into the send slots: slot j of my part of send holds bucket j.
    int *mysend = (&send[me * KEYS]).local();
    std::vector<int> fill(nthreads, 0);
    for (int k : keys) {
        const int j = static_cast<int>(static_cast<long>(k) * nthreads / MAXKEY);
        mysend[j * KEYS + fill[j]++] = k;
    }
    for (int j = 0; j < nthreads; j++) send_count[j * nthreads + me] = fill[j];

    upc::exchange(recv_count, send_count, 1);
    upc::exchange(recv, send, KEYS);

    // My bucket: slot i of my part of recv came from thread i.
    const int *myrecv = (&recv[me * KEYS]).local();
    std::vector<int> bucket;
    for (int i = 0; i < nthreads; i++) {
        const int n = recv_count[i * nthreads + me];
        bucket.insert(bucket.end(), myrecv + i * KEYS, myrecv + i * KEYS + n);
    }
    std::sort(bucket.begin(), bucket.end());

    sum = 0;
    for (int k : bucket) sum += mix(static_cast<unsigned long>(k));
    sums[me] = sum;
    upc::reduce(after, sums, upc::op::add, nthreads);
    lo[me] = bucket.empty() ? MAXKEY : bucket.front();
    hi[me] = bucket.empty() ? -1 : bucket.back();
    count[me] = std::is_sorted(bucket.begin(), bucket.end()) ? static_cast<int>(bucket.size()) : -1;
    upc::barrier();

    if (me == 0) {
        bool ok = before == after;
        long total = 0;
        int smallest = KEYS * nthreads, largest = 0, previous = -1;
        for (int t = 0; t < nthreads; t++) {
            const int n = count[t];
            ok = ok && n >= 0;
            total += n;
            smallest = std::min(smallest, n);
            largest = std::max(largest, n);
            if (n > 0) {
                ok = ok && lo[t] >= previous;
                previous = hi[t];
            }
        }
        ok = ok && total == static_cast<long>(KEYS) * nthreads;
        std::printf("int_sort: %ld keys on %d threads, buckets of %d..%d keys: %s\n", total, nthreads, smallest,
                    largest, ok ? "sorted, checksum OK" : "FAILED");
        if (!ok) upc::global_exit(1);
    }
    return 0;
}
