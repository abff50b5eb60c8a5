// SPDX-License-Identifier: BSD-3-Clause
// Heat diffusion on a plate with ghost rows, in Portico's C++ UPC front end (docs/UPC.md shows the
// UPC original line by line beside it). The plate is ROWS * THREADS rows of N columns, hot along
// its top edge and cold on the other three; Jacobi steps average each point's four neighbours.
//
// Thread t owns rows t*ROWS .. t*ROWS + ROWS - 1: one block of a `shared [ROWS*N]` array. It keeps
// them privately with a ghost row above and below, and each step fetches its neighbours' edge rows
// into the ghosts (upc_memget), computes, and publishes its rows for the next step (upc_memput into
// the other of two shared grids, so that a neighbour still reading the old one is never
// overwritten). The barrier between steps is split: between notify and wait the thread copies its
// new rows into place. Every CHECK_EVERY steps the largest change (a reduction with UPC_MAX)
// decides whether the plate has settled.
//
// Thread 0 then runs the same computation serially and compares: the result must be identical,
// bit for bit, and take the same number of steps.
// Build: c++ -std=c++20 heat.cpp $(pkg-config --cflags --libs portico-upc)
// Run:   portico-run -n 4 ./upc_heat [max steps] [tolerance]
#include <portico/upc.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace upc = portico::upc;

constexpr int N = 64;   // columns
constexpr int ROWS = 8; // rows per thread
constexpr double HOT = 100.0;
constexpr int CHECK_EVERY = 10;

// The serial computation on the whole plate (with its two boundary rows), as thread 0 checks it.
static int serial(std::vector<double> &u, int rows, int max_steps, double eps) {
    std::vector<double> v(u);
    int step = 0;
    while (step < max_steps) {
        double change = 0;
        for (int r = 1; r <= rows; r++)
            for (int c = 1; c < N - 1; c++) {
                v[r * N + c] = 0.25 * (u[(r - 1) * N + c] + u[(r + 1) * N + c] + u[r * N + c - 1] + u[r * N + c + 1]);
                change = std::max(change, std::fabs(v[r * N + c] - u[r * N + c]));
            }
        std::swap(u, v);
        ++step;
        if (step % CHECK_EVERY == 0 && change < eps) break;
    }
    return step;
}

static double cur[ROWS + 2][N], next[ROWS + 2][N]; // my rows, with ghost rows 0 and ROWS + 1

int main(int argc, char **argv) {
    upc::runtime job(argc, argv);
    const int max_steps = argc > 1 ? std::atoi(argv[1]) : 10000;
    const double eps = argc > 2 ? std::atof(argv[2]) : 1e-3;
    const int me = upc::mythread(), nthreads = upc::threads();

    upc::shared_array<double, ROWS * N> u0(ROWS * N * nthreads), u1(ROWS * N * nthreads);
    upc::shared_array<double> diffs(nthreads);
    upc::shared_var<double> maxdiff;
    upc::global_ptr<double, ROWS * N> grid[2] = {u0, u1};

    const int first = me * ROWS; // my first row of the plate
    if (me == 0)
        for (int c = 0; c < N; c++) cur[0][c] = next[0][c] = HOT;

    int step = 0;
    double change = 0;
    while (step < max_steps) {
        upc::global_ptr<double, ROWS *N> g = grid[step % 2];
        if (me > 0) upc::memget(cur[0], g + (first - 1) * N, N);
        if (me < nthreads - 1) upc::memget(cur[ROWS + 1], g + (first + ROWS) * N, N);

        double local = 0;
        for (int r = 1; r <= ROWS; r++)
            for (int c = 1; c < N - 1; c++) {
                next[r][c] = 0.25 * (cur[r - 1][c] + cur[r + 1][c] + cur[r][c - 1] + cur[r][c + 1]);
                local = std::max(local, std::fabs(next[r][c] - cur[r][c]));
            }
        upc::memput(grid[(step + 1) % 2] + first * N, &next[1][0], ROWS * N);
        ++step;

        upc::notify();
        std::memcpy(cur[1], next[1], sizeof(double) * ROWS * N);
        upc::wait();

        if (step % CHECK_EVERY == 0) {
            diffs[me] = local;
            upc::reduce(maxdiff, diffs, upc::op::max, nthreads, upc::in_allsync | upc::out_allsync);
            change = maxdiff;
            if (change < eps) break;
        }
    }

    if (me == 0) {
        const int rows = ROWS * nthreads;
        std::vector<double> result(static_cast<std::size_t>(rows * N));
        for (int t = 0; t < nthreads; t++)
            upc::memget(&result[static_cast<std::size_t>(t * ROWS * N)], grid[step % 2] + t * ROWS * N, ROWS * N);

        std::vector<double> plate(static_cast<std::size_t>((rows + 2) * N), 0.0);
        std::fill_n(plate.begin(), N, HOT);
        const int serial_steps = serial(plate, rows, max_steps, eps);
        const bool same = serial_steps == step && std::equal(result.begin(), result.end(), plate.begin() + N);
        double centre = result[static_cast<std::size_t>(rows / 2 * N + N / 2)];
        std::printf("heat: %dx%d plate on %d threads, %d steps (last max change %.3g), centre %.4f: %s\n", rows, N,
                    nthreads, step, change, centre, same ? "same as the serial computation, OK" : "FAILED");
        if (!same) upc::global_exit(1);
    }
    return 0;
}
