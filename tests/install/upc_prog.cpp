// SPDX-License-Identifier: BSD-3-Clause
// A C++ front-end program, as README's UPC section builds it (install.readme): the same ring as
// upc_prog.c, line for line in portico/upc.hpp.
#include <portico/upc.hpp>

#include <cstdio>

namespace upc = portico::upc;

int main(int argc, char **argv) {
    upc::runtime job(argc, argv);
    const int t = upc::threads(), me = upc::mythread();
    upc::shared_array<int> a(static_cast<size_t>(t)); // shared int a[THREADS]
    a[static_cast<size_t>((me + 1) % t)] = 1000 + me;
    upc::barrier();
    const int got = a[static_cast<size_t>(me)];
    if (got != 1000 + (me + t - 1) % t) {
        std::fprintf(stderr, "thread %d: found %d\n", me, got);
        upc::global_exit(2);
    }
    std::printf("thread %d of %d: upc++ ok\n", me, t);
    upc::barrier();
    return 0;
}
