// SPDX-License-Identifier: BSD-3-Clause
// The UPC Collectives 1.0 library (upc_collective.h) over runtime.hpp; docs/UPC.md, *Collectives*.
//
// Algorithms:
// - broadcast: down a binomial tree rooted at src's thread; each thread writes its
//   block into its children's blocks, then signals them.
// - scatter: each thread reads its own chunk from the root (parallel gets, no writes into a
//   thread that may not have entered); gather, gather_all, exchange, permute: each thread writes
//   its own data into place (asynchronous puts, completed before it returns).
// - reduce with an operator the engine computes (ADD, MULT, MIN, MAX on every type; AND, OR, XOR,
//   LOGAND, LOGOR on the integer types): a binomial tree over the threads that own elements,
//   rooted at dst's thread when it owns some; each thread folds its elements, and children add
//   their value to the parent's accumulator with one Portals atomic.
// - reduce with UPC_FUNC, UPC_NONCOMM_FUNC, or LOGAND/LOGOR on floating types: the same tree, the
//   values put into the parent's scratch and combined by the parent in software. For
//   UPC_NONCOMM_FUNC the tree is rooted at the first element's thread and values travel per
//   "course" (one block of each thread), so that every combination is of adjacent runs in index
//   order.
// - prefix_reduce: a scan, not a reduce, on that tree, up and then down: each thread learns the
//   fold of everything before each of its blocks and writes its prefixes.
// - sort: gathered to A's first thread, sorted there (stable merge sort calling the user's
//   function on pointers-to-shared into a local-heap copy), written back.
//
// Synchronisation modes: UPC_IN_ALLSYNC and UPC_IN_MYSYNC enter through barrier(), which
// completes the caller's earlier writes and orders what follows after every thread's; MYSYNC is
// served by the stronger ALLSYNC, as the specification allows. UPC_IN_NOSYNC starts at once (the
// program promises its data is ready). The OUT modes mirror this on the way out, and every call
// completes its own writes (sync_puts) before returning, so that with UPC_OUT_NOSYNC the data is
// in place once the last thread has returned.
//
// Messages between threads are "signals": a put_counted of a 64-bit tag into the receiver's
// Control::coll_slots[2 * sender], waited for with wait_counted on kPtColl. A tag is
// (call number << 24) | step; every thread numbers the collective calls alike (they are
// collective), so tags from one sender only grow, a slot never needs resetting, and a tag that is
// already past the one awaited means the awaited one was sent too (each sender's signals are
// acknowledged one at a time, in order).
//
// Scratch reuse (Control::coll_scratch) is made safe by handshakes, not by parity: another
// thread writes into a thread's scratch only after that thread has signalled, in the same call,
// that the area is free ("ready"), and a thread leaves a call only once everything written into
// its scratch for that call has been consumed. A fast thread's next collective therefore waits
// for the slow owner's "ready" before it touches the owner's scratch, whatever the sync modes; no
// barrier is needed for that.
//
// Easy to get wrong (docs/UPC.md, *Collectives*): exchange sends chunk j of its own block to block
// j (a transpose, not gather_all); UPC_LOGOR is a logical or (PTL_LOR), not PTL_LAND.
#include "runtime.hpp"
#include "upc_settings.hpp"

#include <upc_collective.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#define UPC_EXPORT extern "C" __attribute__((visibility("default")))

namespace portico::upc {
namespace {

// ---- basics ---------------------------------------------------------------------------------------

size_t nthreads() { return static_cast<size_t>(threads()); }
size_t me() { return static_cast<size_t>(mythread()); }
int as_thread(size_t t) { return static_cast<int>(t); }
size_t thread_of(upc_shared_ptr_t p) { return upc_pts_thread(p); }

// (control_offset is not a constant expression: it goes through a null Control.)
const uint64_t kScratch = control_offset(&Control::coll_scratch);
const uint64_t kSlots = control_offset(&Control::coll_slots);
constexpr unsigned kStepBits = 24;

uint64_t g_calls = 0; // collective calls so far, alike on every thread

uint64_t tag(uint64_t call, uint64_t step) { return (call << kStepBits) | step; }

// Tells `to` that step `t` of this call happened on this thread (and, with it, every write this
// thread made before: put_counted completes earlier puts to `to` first).
void signal(size_t to, uint64_t t) {
    const auto value = static_cast<int64_t>(t);
    put_counted(as_thread(to), kSlots + 2 * me() * sizeof(int64_t), &value, sizeof value, kPtColl);
}

// Waits for `from`'s signal of step `t` (or a later one).
void await(size_t from, uint64_t t) {
    const int64_t *slot = &my_control().coll_slots[2 * from];
    const auto want = static_cast<int64_t>(t);
    wait_counted(kPtColl, [slot, want] { return __atomic_load_n(slot, __ATOMIC_ACQUIRE) >= want; });
}

unsigned char *own_scratch() { return my_control().coll_scratch; }

// ---- entry and exit ---------------------------------------------------------------------------------

bool check_enabled() {
    static const bool on = settings::kUpcCollCheck.get();
    return on;
}

// What UPC_COLL_CHECK compares across threads: everything that must be single-valued except
// function pointers (which differ between processes under address randomisation).
struct CallArgs {
    char fn[32] = {};
    int64_t flags = 0;
    uint64_t nbytes = 0, nelems = 0, blk = 0, elem_size = 0;
    int64_t op = -1;
    uint64_t dst = 0, src = 0, perm = 0;
};

void check_single_valued(const CallArgs &mine) {
    CallArgs first = mine;
    broadcast(&first, sizeof first, 0);
    if (std::strncmp(first.fn, mine.fn, sizeof mine.fn) != 0)
        fatal(std::string("collective mismatch: this thread called ") + mine.fn + " while thread 0 called " + first.fn);
    auto differs = [&](const char *what, uint64_t here, uint64_t there) {
        if (here != there)
            fatal(std::string(mine.fn) + ": argument " + what + " is not single-valued (" + std::to_string(here) +
                  " on this thread, " + std::to_string(there) + " on thread 0)");
    };
    differs("sync_mode", static_cast<uint64_t>(mine.flags), static_cast<uint64_t>(first.flags));
    differs("nbytes", mine.nbytes, first.nbytes);
    differs("nelems", mine.nelems, first.nelems);
    differs("blk_size", mine.blk, first.blk);
    differs("elem_size", mine.elem_size, first.elem_size);
    differs("op", static_cast<uint64_t>(mine.op), static_cast<uint64_t>(first.op));
    differs("dst", mine.dst, first.dst);
    differs("src", mine.src, first.src);
    differs("perm", mine.perm, first.perm);
}

// The start of every collective: argument checks, the call number, the entry synchronisation.
uint64_t begin(const CallArgs &args) {
    const int64_t flags = args.flags;
    const int64_t in = flags & 3, out = flags & 12;
    if ((flags & ~int64_t{15}) != 0 || in == 3 || out == 12)
        fatal(std::string(args.fn) + ": invalid sync_mode " + std::to_string(flags));
    // UPC forbids collectives between upc_notify and upc_wait; the internal barrier would only
    // report a second notify, so say what happened instead.
    if ((in != UPC_IN_NOSYNC || out != UPC_OUT_NOSYNC || check_enabled()) && barrier_active())
        fatal(std::string(args.fn) + ": called between upc_notify and upc_wait");
    if (check_enabled()) check_single_valued(args);
    const uint64_t call = ++g_calls;
    if (in != UPC_IN_NOSYNC) barrier();
    return call;
}

void end(int64_t flags) {
    sync_puts();
    if ((flags & 12) != UPC_OUT_NOSYNC) barrier();
}

CallArgs args_of(const char *fn, upc_flag_t flags) {
    CallArgs a;
    std::strncpy(a.fn, fn, sizeof a.fn - 1);
    a.flags = flags;
    return a;
}

void require_pointer(upc_shared_ptr_t p, const char *fn, const char *what) {
    if (upc_pts_is_null(p)) fatal(std::string(fn) + ": " + what + " is a null pointer-to-shared");
    if (thread_of(p) >= nthreads())
        fatal(std::string(fn) + ": " + what + " points to thread " + std::to_string(thread_of(p)) + " of " +
              std::to_string(nthreads()));
}

// The start of the collectives that move nbytes per thread from src to dst (and permute, with its
// perm): their arguments for UPC_COLL_CHECK, the pointers checked when there is data to move,
// then begin().
uint64_t begin_transfer(const char *fn, upc_flag_t sync_mode, upc_shared_ptr_t dst, upc_shared_ptr_t src, size_t nbytes,
                        const upc_shared_ptr_t *perm = nullptr) {
    CallArgs args = args_of(fn, sync_mode);
    args.nbytes = nbytes;
    args.dst = dst.bits;
    args.src = src.bits;
    args.perm = perm ? perm->bits : 0;
    if (nbytes) {
        require_pointer(dst, fn, "dst");
        require_pointer(src, fn, "src");
        if (perm) require_pointer(*perm, fn, "perm");
    }
    return begin(args);
}

// ---- array shapes -----------------------------------------------------------------------------------

struct Where {
    size_t thread;
    uint64_t offset;
};

// Block i of `shared [bytes] char` blocks starting at p, p taken as having phase 0.
Where block_of(upc_shared_ptr_t p, size_t i, size_t bytes) {
    const size_t k = thread_of(p) + i;
    return {k % nthreads(), upc_pts_vaddr(p) + (k / nthreads()) * bytes};
}

// `shared [blk] E a[n]` with sizeof(E) == es, starting at a pointer's thread and phase; blk 0 is the
// indefinite block size (everything on the first thread).
struct Array {
    size_t t0 = 0, phase = 0, blk = 0, es = 0, n = 0;
    uint64_t vaddr = 0;

    Array(upc_shared_ptr_t p, size_t block, size_t elem, size_t count, const char *fn)
        : t0(thread_of(p)), phase(block ? upc_pts_phase(p) : 0), blk(block), es(elem), n(count),
          vaddr(upc_pts_vaddr(p)) {
        if (block && phase >= block)
            fatal(std::string(fn) + ": the pointer's phase " + std::to_string(phase) + " is not below blk_size " +
                  std::to_string(block));
    }
    size_t nblocks() const { return n == 0 ? 0 : blk == 0 ? 1 : (phase + n + blk - 1) / blk; }
    size_t block_lo(size_t b) const { return blk == 0 || b * blk <= phase ? 0 : b * blk - phase; }
    size_t block_hi(size_t b) const { return blk == 0 ? n : std::min(n, (b + 1) * blk - phase); }
    Where element(size_t i) const {
        if (blk == 0) return {t0, vaddr + i * es};
        const size_t pos = phase + i, b = pos / blk, k = t0 + b;
        // The block's start on its thread is course k / THREADS past the first block's start.
        return {k % nthreads(), vaddr - phase * es + (k / nthreads()) * blk * es + (pos % blk) * es};
    }
    // f(where, first index, count) for each stretch of [first, first + count) contiguous on one thread.
    template <typename F> void runs(size_t first, size_t count, F f) const {
        while (count) {
            const size_t len = blk == 0 ? count : std::min(count, blk - (phase + first) % blk);
            f(element(first), first, len);
            first += len;
            count -= len;
        }
    }
};

// ---- reduction operators ----------------------------------------------------------------------------

template <typename T> constexpr ptl_datatype_t portals_type() {
    static_assert(sizeof(long) == 8, "UPC long is a 64-bit Portals type");
    if constexpr (std::is_same_v<T, signed char>)
        return PTL_INT8_T;
    else if constexpr (std::is_same_v<T, unsigned char>)
        return PTL_UINT8_T;
    else if constexpr (std::is_same_v<T, short>)
        return PTL_INT16_T;
    else if constexpr (std::is_same_v<T, unsigned short>)
        return PTL_UINT16_T;
    else if constexpr (std::is_same_v<T, int>)
        return PTL_INT32_T;
    else if constexpr (std::is_same_v<T, unsigned>)
        return PTL_UINT32_T;
    else if constexpr (std::is_same_v<T, long>)
        return PTL_INT64_T;
    else if constexpr (std::is_same_v<T, unsigned long>)
        return PTL_UINT64_T;
    else if constexpr (std::is_same_v<T, float>)
        return PTL_FLOAT;
    else if constexpr (std::is_same_v<T, double>)
        return PTL_DOUBLE;
    else {
        static_assert(std::is_same_v<T, long double>);
        return PTL_LONG_DOUBLE;
    }
}

template <typename T> class Op {
public:
    Op(upc_op_t op, T (*func)(T, T), const char *fn) : op_(op), func_(func) {
        if (op < UPC_ADD || op > UPC_NONCOMM_FUNC) fatal(std::string(fn) + ": unknown upc_op_t " + std::to_string(op));
        if ((op == UPC_FUNC || op == UPC_NONCOMM_FUNC) && !func)
            fatal(std::string(fn) + ": UPC_FUNC and UPC_NONCOMM_FUNC need a function");
        if constexpr (!std::is_integral_v<T>) {
            // Collectives 1.0 leaves the bitwise operators undefined on floating types: say so.
            if (op == UPC_AND || op == UPC_OR || op == UPC_XOR)
                fatal(std::string(fn) + ": UPC_AND, UPC_OR and UPC_XOR need an integer type");
        }
    }

    bool commutative() const { return op_ != UPC_NONCOMM_FUNC; }

    // The Portals atomic that computes this operator on T, if there is one (LOGOR is PTL_LOR, not
    // PTL_LAND); the engine has no logical or bitwise operators on floating types.
    bool portals_op(ptl_op_t &out) const {
        switch (op_) {
        case UPC_ADD: out = PTL_SUM; return true;
        case UPC_MULT: out = PTL_PROD; return true;
        case UPC_MIN: out = PTL_MIN; return true;
        case UPC_MAX: out = PTL_MAX; return true;
        default: break;
        }
        if constexpr (std::is_integral_v<T>) {
            switch (op_) {
            case UPC_AND: out = PTL_BAND; return true;
            case UPC_OR: out = PTL_BOR; return true;
            case UPC_XOR: out = PTL_BXOR; return true;
            case UPC_LOGAND: out = PTL_LAND; return true;
            case UPC_LOGOR: out = PTL_LOR; return true;
            default: break;
            }
        }
        return false;
    }

    // a op b, a the earlier operand in index order. Integer + and * wrap (done in 64-bit unsigned,
    // where C++ defines wrapping, then narrowed modulo 2^N), as the engine's atomics do.
    T operator()(T a, T b) const {
        switch (op_) {
        case UPC_ADD:
            if constexpr (std::is_integral_v<T>)
                return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
            else
                return a + b;
        case UPC_MULT:
            if constexpr (std::is_integral_v<T>)
                return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
            else
                return a * b;
        case UPC_AND:
        case UPC_OR:
        case UPC_XOR:
            if constexpr (std::is_integral_v<T>)
                return static_cast<T>(op_ == UPC_AND ? (a & b) : op_ == UPC_OR ? (a | b) : (a ^ b));
            else
                break;
        case UPC_LOGAND: return (a != T(0) && b != T(0)) ? T(1) : T(0);
        case UPC_LOGOR: return (a != T(0) || b != T(0)) ? T(1) : T(0);
        case UPC_MIN: return b < a ? b : a;
        case UPC_MAX: return b > a ? b : a;
        default: return func_(a, b);
        }
        return a; // not reached: the constructor refused bitwise operators on floating types
    }

private:
    upc_op_t op_;
    T (*func_)(T, T);
};

template <typename T> T load(const unsigned char *p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// This thread's own memory at an element of one of its blocks.
const unsigned char *own_element(const Array &a, size_t i) {
    const Where w = a.element(i);
    if (w.thread != me()) fatal("collectives: element " + std::to_string(i) + " is not this thread's");
    return static_cast<const unsigned char *>(local_addr(as_thread(w.thread), w.offset));
}

// The fold, in index order, of elements [lo, hi) of block b, which is this thread's.
template <typename T> T fold_block(const Array &a, size_t b, const Op<T> &op) {
    const size_t lo = a.block_lo(b), hi = a.block_hi(b);
    const unsigned char *p = own_element(a, lo);
    T acc = load<T>(p);
    for (size_t i = 1; i < hi - lo; ++i) acc = op(acc, load<T>(p + i * sizeof(T)));
    return acc;
}

// ---- the reduction tree -----------------------------------------------------------------------------
//
// The threads that own elements ("participants") are those of blocks 0..J-1, J = min(blocks,
// THREADS): participant j is thread (t0 + j) % THREADS and owns blocks j, j + THREADS, ... (one per
// "course"). They form a binomial tree over v = (j - root) mod J: v's parent is v without its lowest
// set bit, its children v + 1, v + 2, v + 4, ... below that bit, and its subtree the participants
// v .. v + lowbit(v) - 1. Combining a node's own value with its children's in increasing order
// therefore follows index order when the root is participant 0, which the order-preserving cases
// (UPC_NONCOMM_FUNC, prefix_reduce) use.
struct Tree {
    size_t t0, J, root, j, v;

    Tree(size_t first_thread, size_t participants, size_t root_index)
        : t0(first_thread), J(participants), root(root_index), j((me() + nthreads() - first_thread) % nthreads()),
          v((j + participants - root_index) % participants) {}
    bool is_root() const { return v == 0; }
    size_t thread_at(size_t rel) const { return (t0 + (rel + root) % J) % nthreads(); }
    size_t index_at(size_t rel) const { return (rel + root) % J; }
    size_t parent_thread() const { return thread_at(v & (v - 1)); }
    // This node's place among its parent's children (the child v + 2^k is child k).
    size_t place() const { return static_cast<size_t>(std::countr_zero(v)); }
    std::vector<size_t> children() const { // relative indexes, increasing
        std::vector<size_t> c;
        for (size_t s = 1; s < J; s <<= 1) {
            if ((v != 0 && s >= (v & (~v + 1))) || v + s >= J) break;
            c.push_back(v + s);
        }
        return c;
    }
    // The most children any node has (the root's): the scratch areas a node must provide.
    size_t max_children() const { return J <= 1 ? 0 : static_cast<size_t>(std::bit_width(J - 1)); }
};

// Reduction with Portals atomics (operators and types the engine computes; commutative and
// associative, so one value per thread): each node's accumulator, at the start of its scratch,
// starts as its own partial value; its children add theirs with one atomic each after the node has
// said "ready", and say "done" after the atomic is acknowledged. The root's accumulator is the result.
template <typename T> T atomic_tree(const Tree &tree, uint64_t call, T own, ptl_op_t pop) {
    std::memcpy(own_scratch(), &own, sizeof own); // no atomic can be in flight: nobody was told "ready"
    const std::vector<size_t> kids = tree.children();
    const uint64_t t = tag(call, 0);
    for (size_t k : kids) signal(tree.thread_at(k), t);
    for (size_t k : kids) await(tree.thread_at(k), t);
    T acc;
    std::memcpy(&acc, own_scratch(), sizeof acc); // the engine's writes, ordered by await's acquire
    if (tree.is_root()) return acc;
    const size_t parent = tree.parent_thread();
    await(parent, t);
    atomic(as_thread(parent), kScratch, &acc, sizeof acc, pop, portals_type<T>());
    signal(parent, t);
    return acc;
}

// A value that may be absent (the prefix before the first element).
template <typename T> struct Maybe {
    bool has = false;
    T value{};
    void add(const Op<T> &op, T x) {
        value = has ? op(value, x) : x;
        has = true;
    }
};

// Reduction and scan in software, in index order: every node holds, per course c, the fold of its
// subtree's blocks of that course (up[c]); children send theirs up into an area of their parent's
// scratch (area k for child k) once the parent said "ready" for the round. Courses travel in rounds
// of `chunk`, as many as the areas hold. For a scan the values come back down: each child gets, in
// its down area, the fold of everything before its subtree in each course, and then writes its own
// elements' prefixes to `out`.
//
// per_course false (commutative operators) folds all of a node's elements into one value instead.
template <typename T>
Maybe<T> software_tree(const Tree &tree, const Array &a, const Op<T> &op, uint64_t call, bool per_course, bool scan,
                       const Array *out) {
    const size_t T_ = nthreads(), nb = a.nblocks();
    const size_t areas = tree.max_children() + (scan ? 1 : 0);
    const size_t chunk = kCollScratchBytes / (std::max<size_t>(areas, 1) * sizeof(T));
    const size_t area_bytes = chunk * sizeof(T);
    const uint64_t down_offset = tree.max_children() * area_bytes;
    // Courses of participant j (blocks j, j + THREADS, ... below nb).
    auto courses = [&](size_t j) { return per_course ? (nb - j + T_ - 1) / T_ : size_t{1}; };
    const size_t total = courses(0);
    const size_t rounds = (total + chunk - 1) / chunk;
    if (2 * rounds + 1 >= (uint64_t{1} << kStepBits)) fatal("a reduction of too many blocks");

    const std::vector<size_t> kids = tree.children();
    const size_t mine = courses(tree.j);
    std::vector<size_t> kid_courses;
    for (size_t k : kids) kid_courses.push_back(courses(tree.index_at(k)));

    Maybe<T> result;                                // the root's fold of everything so far
    std::vector<T> own, up, down;                   // this round's courses: own blocks, subtree, prefix before subtree
    std::vector<std::vector<T>> below(kids.size()); // the children's subtree values, kept for the scan
    std::vector<T> outbuf;
    for (size_t r = 0; r < rounds; ++r) {
        const size_t c0 = r * chunk, c1 = std::min(total, c0 + chunk);
        const size_t n = mine > c0 ? std::min(mine, c1) - c0 : 0;
        own.resize(n);
        if (!per_course) {
            Maybe<T> all;
            for (size_t b = tree.j; b < nb; b += T_) all.add(op, fold_block(a, b, op));
            own[0] = all.value;
        } else {
            for (size_t i = 0; i < n; ++i) own[i] = fold_block(a, (c0 + i) * T_ + tree.j, op);
        }
        up = own;
        const uint64_t t_up = tag(call, 2 * r), t_down = tag(call, 2 * r + 1);
        for (size_t k : kids) signal(tree.thread_at(k), t_up);
        for (size_t x = 0; x < kids.size(); ++x) {
            const size_t kn = kid_courses[x] > c0 ? std::min(kid_courses[x], c1) - c0 : 0;
            await(tree.thread_at(kids[x]), t_up);
            below[x].resize(kn);
            std::memcpy(below[x].data(), own_scratch() + x * area_bytes, kn * sizeof(T));
            for (size_t i = 0; i < kn; ++i) up[i] = op(up[i], below[x][i]);
        }
        down.assign(n, T{});
        std::vector<bool> has_down(n, true);
        if (!tree.is_root()) {
            const size_t parent = tree.parent_thread();
            await(parent, t_up);
            put(as_thread(parent), kScratch + tree.place() * area_bytes, up.data(), n * sizeof(T));
            signal(parent, t_up);
            if (scan) {
                await(parent, t_down);
                std::memcpy(down.data(), own_scratch() + down_offset, n * sizeof(T));
            }
        } else {
            for (size_t i = 0; i < n; ++i) {
                has_down[i] = result.has;
                down[i] = result.value;
                result.add(op, up[i]);
            }
        }
        if (!scan) continue;
        // Down: child x's prefix is this node's prefix, its own blocks, then children 0..x-1.
        std::vector<T> running(n);
        for (size_t i = 0; i < n; ++i) running[i] = has_down[i] ? op(down[i], own[i]) : own[i];
        for (size_t x = 0; x < kids.size(); ++x) {
            const size_t kn = below[x].size();
            const size_t kid = tree.thread_at(kids[x]);
            put(as_thread(kid), kScratch + down_offset, running.data(), kn * sizeof(T));
            signal(kid, t_down);
            for (size_t i = 0; i < kn; ++i) running[i] = op(running[i], below[x][i]);
        }
        // This node's own elements.
        for (size_t i = 0; i < n; ++i) {
            const size_t b = (c0 + i) * T_ + tree.j;
            const size_t lo = a.block_lo(b), hi = a.block_hi(b);
            const unsigned char *p = own_element(a, lo);
            outbuf.resize(hi - lo);
            Maybe<T> acc;
            if (has_down[i]) acc.add(op, down[i]);
            for (size_t e = 0; e < hi - lo; ++e) {
                acc.add(op, load<T>(p + e * sizeof(T)));
                outbuf[e] = acc.value;
            }
            out->runs(lo, hi - lo, [&](Where d, size_t first, size_t len) {
                put(as_thread(d.thread), d.offset, outbuf.data() + (first - lo), len * sizeof(T));
            });
        }
    }
    return result;
}

// The arguments of reduce and prefix_reduce for UPC_COLL_CHECK, the pointers checked when there
// are elements.
CallArgs reduction_args(const char *fn, upc_flag_t flags, upc_shared_ptr_t dst, upc_shared_ptr_t src, upc_op_t op,
                        size_t nelems, size_t blk) {
    CallArgs args = args_of(fn, flags);
    args.nelems = nelems;
    args.blk = blk;
    args.op = op;
    args.dst = dst.bits;
    args.src = src.bits;
    if (nelems) {
        require_pointer(dst, fn, "dst");
        require_pointer(src, fn, "src");
    }
    return args;
}

template <typename T>
void reduce(const char *fn, upc_shared_ptr_t dst, upc_shared_ptr_t src, upc_op_t op, size_t nelems, size_t blk,
            T (*func)(T, T), upc_flag_t flags) {
    const CallArgs args = reduction_args(fn, flags, dst, src, op, nelems, blk);
    const Op<T> ops(op, func, fn);
    const Array a(src, blk, sizeof(T), nelems, fn);
    const uint64_t call = begin(args);
    const size_t J = std::min(a.nblocks(), nthreads());
    const size_t j = (me() + nthreads() - a.t0) % nthreads();
    if (j < J) {
        // The result's thread is the root when it owns elements and the order does not matter.
        const size_t jd = (thread_of(dst) + nthreads() - a.t0) % nthreads();
        const Tree tree(a.t0, J, ops.commutative() && jd < J ? jd : 0);
        ptl_op_t pop{};
        Maybe<T> result;
        if (ops.portals_op(pop)) {
            Maybe<T> own;
            for (size_t b = j; b < a.nblocks(); b += nthreads()) own.add(ops, fold_block(a, b, ops));
            result.value = atomic_tree(tree, call, own.value, pop);
            result.has = true;
        } else {
            result = software_tree(tree, a, ops, call, !ops.commutative(), false, nullptr);
        }
        if (tree.is_root()) put(as_thread(thread_of(dst)), upc_pts_vaddr(dst), &result.value, sizeof(T));
    }
    end(flags);
}

template <typename T>
void prefix_reduce(const char *fn, upc_shared_ptr_t dst, upc_shared_ptr_t src, upc_op_t op, size_t nelems, size_t blk,
                   T (*func)(T, T), upc_flag_t flags) {
    const CallArgs args = reduction_args(fn, flags, dst, src, op, nelems, blk);
    const Op<T> ops(op, func, fn);
    const Array a(src, blk, sizeof(T), nelems, fn);
    const Array out(dst, blk, sizeof(T), nelems, fn);
    const uint64_t call = begin(args);
    const size_t J = std::min(a.nblocks(), nthreads());
    const size_t j = (me() + nthreads() - a.t0) % nthreads();
    if (j < J) software_tree(Tree(a.t0, J, 0), a, ops, call, true, true, &out);
    end(flags);
}

// ---- upc_all_sort -------------------------------------------------------------------------------------

// A stable bottom-up merge sort of indexes: only "less or equal" decisions of the user's function
// are used, so an inconsistent function gives some order, never a fault.
template <typename Less> void merge_sort(std::vector<size_t> &idx, Less le) {
    std::vector<size_t> tmp(idx.size());
    for (size_t width = 1; width < idx.size(); width *= 2) {
        for (size_t lo = 0; lo < idx.size(); lo += 2 * width) {
            const size_t mid = std::min(lo + width, idx.size()), hi = std::min(lo + 2 * width, idx.size());
            size_t i = lo, k = mid, o = lo;
            while (i < mid && k < hi) tmp[o++] = le(idx[i], idx[k]) ? idx[i++] : idx[k++];
            while (i < mid) tmp[o++] = idx[i++];
            while (k < hi) tmp[o++] = idx[k++];
        }
        idx.swap(tmp);
    }
}

} // namespace
} // namespace portico::upc

using namespace portico::upc;

UPC_EXPORT void upc_coll_init(void) {}

UPC_EXPORT void upc_all_broadcast(upc_shared_ptr_t dst, upc_shared_ptr_t src, size_t nbytes, upc_flag_t sync_mode) {
    const uint64_t call = begin_transfer("upc_all_broadcast", sync_mode, dst, src, nbytes);
    if (nbytes) {
        // Down a binomial tree rooted at src's thread: each thread receives its block from its
        // parent, then writes it into its children's blocks, largest subtree first.
        const size_t T_ = nthreads(), root = thread_of(src), v = (me() + T_ - root) % T_;
        auto block = [&](size_t thread) { return block_of(dst, (thread + T_ - thread_of(dst)) % T_, nbytes); };
        const Where mine = block(me());
        const uint64_t t = tag(call, 0);
        if (v == 0)
            copy(as_thread(mine.thread), mine.offset, as_thread(root), upc_pts_vaddr(src), nbytes);
        else
            await((root + (v & (v - 1))) % T_, t);
        const void *data = local_addr(as_thread(mine.thread), mine.offset);
        std::vector<size_t> steps; // children v + s, as in Tree
        for (size_t s = 1; s < T_; s <<= 1) {
            if ((v != 0 && s >= (v & (~v + 1))) || v + s >= T_) break;
            steps.push_back(s);
        }
        for (auto s = steps.rbegin(); s != steps.rend(); ++s) {
            const size_t child = (root + v + *s) % T_;
            const Where w = block(child);
            put(as_thread(w.thread), w.offset, data, nbytes);
            signal(child, t);
        }
    }
    end(sync_mode);
}

UPC_EXPORT void upc_all_scatter(upc_shared_ptr_t dst, upc_shared_ptr_t src, size_t nbytes, upc_flag_t sync_mode) {
    begin_transfer("upc_all_scatter", sync_mode, dst, src, nbytes);
    if (nbytes) {
        // Each thread fetches its own block: the reads run in parallel, and nobody writes to a
        // thread that may not have entered.
        const size_t i = (me() + nthreads() - thread_of(dst)) % nthreads();
        const Where w = block_of(dst, i, nbytes);
        copy(as_thread(w.thread), w.offset, as_thread(thread_of(src)), upc_pts_vaddr(src) + i * nbytes, nbytes);
    }
    end(sync_mode);
}

UPC_EXPORT void upc_all_gather(upc_shared_ptr_t dst, upc_shared_ptr_t src, size_t nbytes, upc_flag_t sync_mode) {
    begin_transfer("upc_all_gather", sync_mode, dst, src, nbytes);
    if (nbytes) {
        // Each thread writes its own block into place: parallel, and dst's thread has no loop.
        const size_t i = (me() + nthreads() - thread_of(src)) % nthreads();
        const Where w = block_of(src, i, nbytes);
        put(as_thread(thread_of(dst)), upc_pts_vaddr(dst) + i * nbytes, local_addr(as_thread(w.thread), w.offset),
            nbytes);
    }
    end(sync_mode);
}

UPC_EXPORT void upc_all_gather_all(upc_shared_ptr_t dst, upc_shared_ptr_t src, size_t nbytes, upc_flag_t sync_mode) {
    begin_transfer("upc_all_gather_all", sync_mode, dst, src, nbytes);
    if (nbytes) {
        const size_t T_ = nthreads(), i = (me() + T_ - thread_of(src)) % T_;
        const Where w = block_of(src, i, nbytes);
        const void *data = local_addr(as_thread(w.thread), w.offset);
        // Every thread starts with a different destination so that no thread receives from all at once.
        for (size_t s = 0; s < T_; ++s) {
            const Where d = block_of(dst, (i + s) % T_, nbytes * T_);
            put(as_thread(d.thread), d.offset + i * nbytes, data, nbytes);
        }
    }
    end(sync_mode);
}

UPC_EXPORT void upc_all_exchange(upc_shared_ptr_t dst, upc_shared_ptr_t src, size_t nbytes, upc_flag_t sync_mode) {
    begin_transfer("upc_all_exchange", sync_mode, dst, src, nbytes);
    if (nbytes) {
        // Chunk j of this thread's block i goes to chunk i of block j: a transpose (sending block
        // j's chunk instead, as gather_all does, is the classic mistake upc.coll catches).
        const size_t T_ = nthreads(), i = (me() + T_ - thread_of(src)) % T_;
        const Where w = block_of(src, i, nbytes * T_);
        const auto *mine = static_cast<const unsigned char *>(local_addr(as_thread(w.thread), w.offset));
        for (size_t s = 0; s < T_; ++s) {
            const size_t jb = (i + s) % T_;
            const Where d = block_of(dst, jb, nbytes * T_);
            put(as_thread(d.thread), d.offset + i * nbytes, mine + jb * nbytes, nbytes);
        }
    }
    end(sync_mode);
}

UPC_EXPORT void upc_all_permute(upc_shared_ptr_t dst, upc_shared_ptr_t src, upc_shared_ptr_t perm, size_t nbytes,
                                upc_flag_t sync_mode) {
    const char *fn = "upc_all_permute";
    begin_transfer(fn, sync_mode, dst, src, nbytes, &perm);
    if (nbytes) {
        const size_t T_ = nthreads(), i = (me() + T_ - thread_of(src)) % T_;
        auto entry = [&](size_t k) { // perm[k] of a `shared int *` (block size 1)
            const upc_shared_ptr_t p =
                upc_pts_add(perm, static_cast<int64_t>(k), sizeof(int), 1, static_cast<unsigned>(T_));
            int value = 0;
            get(&value, as_thread(upc_pts_thread(p)), upc_pts_vaddr(p), sizeof value);
            if (value < 0 || static_cast<size_t>(value) >= T_)
                fatal(std::string(fn) + ": perm[" + std::to_string(k) + "] is " + std::to_string(value) +
                      ", not a thread");
            return static_cast<size_t>(value);
        };
        if (check_enabled()) {
            std::vector<bool> seen(T_);
            for (size_t k = 0; k < T_; ++k) {
                const size_t target = entry(k);
                if (seen[target])
                    fatal(std::string(fn) + ": perm is not a permutation (" + std::to_string(target) +
                          " appears twice)");
                seen[target] = true;
            }
        }
        const Where w = block_of(src, i, nbytes);
        const Where d = block_of(dst, entry(i), nbytes);
        put(as_thread(d.thread), d.offset, local_addr(as_thread(w.thread), w.offset), nbytes);
    }
    end(sync_mode);
}

#define PORTICO_UPC_REDUCE(code, type)                                                                                 \
    UPC_EXPORT void upc_all_reduce##code(upc_shared_ptr_t dst, upc_shared_ptr_t src, upc_op_t op, size_t nelems,       \
                                         size_t blk_size, type (*func)(type, type), upc_flag_t sync_mode) {            \
        reduce<type>("upc_all_reduce" #code, dst, src, op, nelems, blk_size, func, sync_mode);                         \
    }                                                                                                                  \
    UPC_EXPORT void upc_all_prefix_reduce##code(upc_shared_ptr_t dst, upc_shared_ptr_t src, upc_op_t op,               \
                                                size_t nelems, size_t blk_size, type (*func)(type, type),              \
                                                upc_flag_t sync_mode) {                                                \
        prefix_reduce<type>("upc_all_prefix_reduce" #code, dst, src, op, nelems, blk_size, func, sync_mode);           \
    }
PORTICO_UPC_REDUCE(C, signed char)
PORTICO_UPC_REDUCE(UC, unsigned char)
PORTICO_UPC_REDUCE(S, short)
PORTICO_UPC_REDUCE(US, unsigned short)
PORTICO_UPC_REDUCE(I, int)
PORTICO_UPC_REDUCE(UI, unsigned int)
PORTICO_UPC_REDUCE(L, long)
PORTICO_UPC_REDUCE(UL, unsigned long)
PORTICO_UPC_REDUCE(F, float)
PORTICO_UPC_REDUCE(D, double)
PORTICO_UPC_REDUCE(LD, long double)
#undef PORTICO_UPC_REDUCE

// Gather to A's first thread, sort there, write back: the elements are copied once into a block
// of that thread's local heap (the user's function compares pointers-to-shared, so they must be
// in shared memory), an index array is sorted, and the elements go back in order.
UPC_EXPORT void upc_all_sort(upc_shared_ptr_t A, size_t elem_size, size_t nelems, size_t blk_size,
                             int (*func)(upc_shared_ptr_t, upc_shared_ptr_t), upc_flag_t sync_mode) {
    const char *fn = "upc_all_sort";
    CallArgs args = args_of(fn, sync_mode);
    args.elem_size = elem_size;
    args.nelems = nelems;
    args.blk = blk_size;
    args.src = A.bits;
    const bool work = nelems > 1 && elem_size > 0;
    if (work) {
        require_pointer(A, fn, "A");
        if (!func) fatal(std::string(fn) + ": no comparison function");
    }
    const Array a(A, blk_size, elem_size, nelems, fn);
    begin(args);
    if (work && me() == a.t0) {
        const size_t es = elem_size, bytes = nelems * es;
        if (bytes / es != nelems) fatal(std::string(fn) + ": nelems * elem_size overflows");
        const upc_shared_ptr_t buf = heap_local_alloc(bytes);
        if (upc_pts_is_null(buf))
            fatal(std::string(fn) + ": no room for a " + std::to_string(bytes) + "-byte copy of the array");
        const int here = as_thread(me());
        const uint64_t base = upc_pts_vaddr(buf);
        auto *copy_of = static_cast<unsigned char *>(local_addr(here, base));
        a.runs(0, nelems, [&](Where w, size_t first, size_t len) {
            get(copy_of + first * es, as_thread(w.thread), w.offset, len * es);
        });
        std::vector<size_t> idx(nelems);
        for (size_t k = 0; k < nelems; ++k) idx[k] = k;
        merge_sort(idx, [&](size_t x, size_t y) {
            return func(upc_pts_make(static_cast<unsigned>(me()), 0, base + x * es),
                        upc_pts_make(static_cast<unsigned>(me()), 0, base + y * es)) <= 0;
        });
        std::vector<unsigned char> sorted(bytes);
        for (size_t k = 0; k < nelems; ++k) std::memcpy(sorted.data() + k * es, copy_of + idx[k] * es, es);
        a.runs(0, nelems, [&](Where w, size_t first, size_t len) {
            put(as_thread(w.thread), w.offset, sorted.data() + first * es, len * es);
        });
        sync_puts();
        heap_free(buf);
    }
    end(sync_mode);
}
