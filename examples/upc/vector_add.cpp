// SPDX-License-Identifier: BSD-3-Clause
// Vector addition with upc_forall, the first program of every UPC course, written with Portico's
// C++ front end (docs/UPC.md shows the UPC original line by line beside it). c = a + b over cyclic
// shared arrays: each thread adds the elements it owns, picked by the forall's affinity, so every
// access of the addition is local. The check reads elements another thread wrote.
// Build: c++ -std=c++20 vector_add.cpp $(pkg-config --cflags --libs portico-upc)
// Run:   portico-run -n 4 ./upc_vector_add [elements per thread]
#include <portico/upc.hpp>

#include <cstdio>
#include <cstdlib>

namespace upc = portico::upc;

int main(int argc, char **argv) {
    upc::runtime job(argc, argv);
    upc::shared_array<long> bad(upc::threads());
    upc::shared_var<long> errors;

    const long per_thread = argc > 1 ? std::atol(argv[1]) : 1000;
    const long n = per_thread * upc::threads();
    upc::shared_array<long> a(n), b(n), c(n);

    upc::forall(0L, n, upc::loop_index, [&](long i) {
        a[i] = i;
        b[i] = 2 * i;
    });
    upc::forall(0L, n, upc::owner_of(c), [&](long i) { c[i] = a[i] + b[i]; });
    upc::barrier();

    bad[upc::mythread()] = 0;
    const auto next_thread = [](long i) { return i + 1; };
    upc::forall(0L, n, next_thread, [&](long i) {
        if (c[i] != 3 * i) bad[upc::mythread()]++;
    });
    upc::reduce(errors, bad, upc::op::add, upc::threads(), upc::in_allsync | upc::out_allsync);
    if (upc::mythread() == 0) {
        std::printf("vector_add: %ld elements on %d threads, %ld wrong: %s\n", n, upc::threads(), long{errors},
                    errors == 0 ? "OK" : "FAILED");
        if (errors != 0) upc::global_exit(1);
    }
    return 0;
}
