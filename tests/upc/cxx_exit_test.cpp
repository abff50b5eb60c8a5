// SPDX-License-Identifier: BSD-3-Clause
// How a C++ front-end job ends (docs/UPC.md's cases 39 and 40 in the C++ face): upc::global_exit
// while the other threads wait in a barrier, an exception that escapes one thread's main, an error
// the runtime reports (a lock taken twice), and a normal return through the runtime guard. Run by
// run_exit_test.sh, which checks the job's exit code, the message and that no process is left.
#include <portico/upc.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unistd.h>

namespace upc = portico::upc;

namespace {

void record_pid() {
    const char *dir = std::getenv("EXIT_TEST_DIR");
    if (!dir) return;
    const std::string path = std::string(dir) + "/pid." + std::to_string(upc::mythread());
    if (FILE *f = std::fopen(path.c_str(), "w")) {
        std::fprintf(f, "%ld\n", static_cast<long>(getpid()));
        std::fclose(f);
    }
}

} // namespace

// NOLINTNEXTLINE(bugprone-exception-escape): the mode "exception" lets one escape on purpose
int main(int argc, char **argv) {
    upc::runtime job(argc, argv);
    if (argc != 2) upc::global_exit(1);
    const std::string mode = argv[1];
    const int last = upc::threads() - 1;
    record_pid();
    upc::barrier();
    if (mode == "global-exit") {
        if (upc::mythread() == last) upc::global_exit(6);
        upc::barrier();
        std::fprintf(stderr, "a barrier completed without the thread that called global_exit\n");
        return 1;
    }
    if (mode == "exception") {
        // std::terminate, then abort: the launcher ends the job (128 + SIGABRT).
        if (upc::mythread() == last) throw std::runtime_error("escaped from main");
        upc::barrier();
        return 1;
    }
    if (mode == "lock-twice") {
        upc::mutex m = upc::all_lock_alloc();
        if (upc::mythread() == last) {
            std::lock_guard first(m);
            m.lock(); // the runtime refuses: it would wait for itself for ever
        }
        upc::barrier();
        return 1;
    }
    if (mode == "return") {
        upc::shared_array<int> a(static_cast<std::size_t>(upc::threads()));
        a[static_cast<std::size_t>(upc::mythread())] = 7;
        return 0; // a's collective free, then the guard's final barrier
    }
    return 1;
}
