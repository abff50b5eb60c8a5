/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * portico/upc_abi.h — the compiler interface of Portico's UPC runtime (libportico-upc): what GCC
 * UPC's code generator calls, with its names and calling conventions, and the representation of
 * a pointer-to-shared that such code manipulates inline.
 *
 * A UPC compiler emits these calls; a C program without one (tests, the examples, hand-written
 * ports) calls them the same way, with upc_shared_ptr_t standing for `shared T *`.
 *
 * Pointer-to-shared: GCC UPC's default "packed" representation, 64 bits, address field first
 * (in the high bits): bits 63..30 the address (34 bits: a byte offset into the owning thread's
 * shared segment), bits 29..20 the thread (10 bits: up to 1024 threads), bits 19..0 the phase
 * (20 bits: the element index within the current block). All zero is the null pointer; offset
 * 0 of every segment is the runtime's own and never holds user data. Passed and returned by
 * value in one register, exactly as GCC UPC's 64-bit integer.
 */
#ifndef PORTICO_UPC_ABI_H
#define PORTICO_UPC_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    uint64_t bits;
} upc_shared_ptr_t;

#define UPC_PTS_PHASE_BITS 20
#define UPC_PTS_THREAD_BITS 10
#define UPC_PTS_VADDR_BITS 34
#define UPC_PTS_PHASE_SHIFT 0
#define UPC_PTS_THREAD_SHIFT UPC_PTS_PHASE_BITS
#define UPC_PTS_VADDR_SHIFT (UPC_PTS_PHASE_BITS + UPC_PTS_THREAD_BITS)
#define UPC_PTS_MAX_THREADS (1 << UPC_PTS_THREAD_BITS)
#define UPC_PTS_MAX_BLOCKSIZE ((1u << UPC_PTS_PHASE_BITS) - 1)

static inline uint64_t upc_pts_vaddr(upc_shared_ptr_t p) { return p.bits >> UPC_PTS_VADDR_SHIFT; }
static inline unsigned upc_pts_thread(upc_shared_ptr_t p) {
    return (unsigned)((p.bits >> UPC_PTS_THREAD_SHIFT) & ((1u << UPC_PTS_THREAD_BITS) - 1));
}
static inline unsigned upc_pts_phase(upc_shared_ptr_t p) {
    return (unsigned)((p.bits >> UPC_PTS_PHASE_SHIFT) & ((1u << UPC_PTS_PHASE_BITS) - 1));
}
static inline int upc_pts_is_null(upc_shared_ptr_t p) { return p.bits == 0; }
static inline upc_shared_ptr_t upc_pts_make(unsigned thread, unsigned phase, uint64_t vaddr) {
    upc_shared_ptr_t p;
    p.bits = (vaddr << UPC_PTS_VADDR_SHIFT) | ((uint64_t)thread << UPC_PTS_THREAD_SHIFT) |
             ((uint64_t)phase << UPC_PTS_PHASE_SHIFT);
    return p;
}

/* UPC §6.4.2: p + n for a pointer to `shared [block] T` with sizeof(T) == elem_size and
 * block == 0 for an indefinite block size; threads is THREADS. Floor division throughout, so
 * that negative n walks backwards across threads and blocks. */
static inline upc_shared_ptr_t upc_pts_add(upc_shared_ptr_t p, int64_t n, size_t elem_size, size_t block,
                                           unsigned threads) {
    if (block == 0) return upc_pts_make(upc_pts_thread(p), 0, upc_pts_vaddr(p) + (uint64_t)(n * (int64_t)elem_size));
    const int64_t b = (int64_t)block, t = (int64_t)threads;
    const int64_t phase = (int64_t)upc_pts_phase(p), thread = (int64_t)upc_pts_thread(p);
    const int64_t pos = phase + n; /* elements past the start of the current block */
    int64_t blocks = pos / b, new_phase = pos % b;
    if (new_phase < 0) {
        new_phase += b;
        blocks -= 1;
    }
    const int64_t th = thread + blocks;
    int64_t courses = th / t, new_thread = th % t;
    if (new_thread < 0) {
        new_thread += t;
        courses -= 1;
    }
    const int64_t delta = (new_phase - phase + courses * b) * (int64_t)elem_size;
    return upc_pts_make((unsigned)new_thread, (unsigned)new_phase, upc_pts_vaddr(p) + (uint64_t)delta);
}

/* UPC §6.4.2: p - q in elements, for two pointers into the same shared array. */
static inline int64_t upc_pts_diff(upc_shared_ptr_t p, upc_shared_ptr_t q, size_t elem_size, size_t block,
                                   unsigned threads) {
    if (block == 0) return ((int64_t)upc_pts_vaddr(p) - (int64_t)upc_pts_vaddr(q)) / (int64_t)elem_size;
    const int64_t b = (int64_t)block, t = (int64_t)threads;
    const int64_t s = (int64_t)elem_size;
    /* The start of each pointer's block is base + course * b * s on its thread. */
    const int64_t courses = (((int64_t)upc_pts_vaddr(p) - (int64_t)upc_pts_phase(p) * s) -
                             ((int64_t)upc_pts_vaddr(q) - (int64_t)upc_pts_phase(q) * s)) /
                            (b * s);
    return (courses * t + (int64_t)upc_pts_thread(p) - (int64_t)upc_pts_thread(q)) * b + (int64_t)upc_pts_phase(p) -
           (int64_t)upc_pts_phase(q);
}

/* ---- the program's threads (GCC UPC: globals the generated code reads) ---------------------- */
extern int THREADS;
extern int MYTHREAD;
/* upc_forall nesting depth, which GCC UPC's generated code maintains. */
extern int __upc_forall_depth;

/* ---- shared accesses: relaxed __get<t>2/__put<t>2, strict __gets<t>2/__puts<t>2 ------------- */
/* GCC UPC's type codes and the C type each moves; X(code, type) for every one (the runtime
 * defines the entry points from the same list). */
#define PORTICO_UPC_TYPE_CODES(X)                                                                                      \
    X(qi, uint8_t)                                                                                                     \
    X(hi, uint16_t)                                                                                                    \
    X(si, uint32_t)                                                                                                    \
    X(di, uint64_t)                                                                                                    \
    X(ti, unsigned __int128)                                                                                           \
    X(sf, float)                                                                                                       \
    X(df, double)                                                                                                      \
    X(tf, __float128)                                                                                                  \
    X(xf, long double)
/* __extension__: the 128-bit types are GCC's, which -pedantic would otherwise reject. */
#define PORTICO_UPC_ACCESS(code, type)                                                                                 \
    __extension__ type __get##code##2(upc_shared_ptr_t p);                                                             \
    __extension__ type __gets##code##2(upc_shared_ptr_t p);                                                            \
    __extension__ void __put##code##2(upc_shared_ptr_t p, type v);                                                     \
    __extension__ void __puts##code##2(upc_shared_ptr_t p, type v);
PORTICO_UPC_TYPE_CODES(PORTICO_UPC_ACCESS)
#undef PORTICO_UPC_ACCESS

/* Blocks of n bytes: shared to local, local to shared, shared to shared; the s forms are strict. */
void __getblk3(void *dst, upc_shared_ptr_t src, size_t n);
void __getsblk3(void *dst, upc_shared_ptr_t src, size_t n);
void __putblk3(upc_shared_ptr_t dst, void *src, size_t n);
void __putsblk3(upc_shared_ptr_t dst, void *src, size_t n);
void __copyblk3(upc_shared_ptr_t dst, upc_shared_ptr_t src, size_t n);
void __copysblk3(upc_shared_ptr_t dst, upc_shared_ptr_t src, size_t n);

/* The local address of shared data this process can reach with loads and stores (its own
 * thread's, and with node-local memory that of every thread on this machine); NULL otherwise. */
void *__cvtaddr(upc_shared_ptr_t p);

/* ---- synchronisation ------------------------------------------------------------------------ */
/* upc_notify/upc_wait/upc_barrier with an expression pass its value; without one, GCC UPC passes
 * INT_MIN, which matches any value (so a program's own INT_MIN is anonymous here, as in GCC UPC;
 * the C++ front end keeps every int value named). */
void __upc_notify(int id);
void __upc_wait(int id);
void __upc_barrier(int id);
void __upc_fence(void);
/* Portico's own barrier entries for front ends that keep every int value named (the C++ front
 * end): the id is 64-bit and anonymity a flag. */
void portico_upc_notify(int64_t id, int anonymous);
void portico_upc_wait(int64_t id, int anonymous);

/* ---- start-up ------------------------------------------------------------------------------- */
/* A program linked with the runtime's main (pkg-config portico-upc) defines upc_main instead of
 * main, as a UPC compiler renames it; the runtime starts the job, calls it, and ends the thread
 * with the implicit barrier of UPC §5.1.2.2.3. */
int upc_main(int argc, char **argv, char **envp);
/* For a program that owns main: start the runtime (collective: every process of the job), and
 * end it (the final barrier, then teardown) before main returns. A program that returns from
 * main or calls exit() without portico_upc_finalize gets the final barrier from an exit handler.
 * Errors end the job with a message on stderr. */
void portico_upc_init(int *argc, char ***argv);
/* Statically declared shared data: a UPC compiler puts one thread's part of every shared static
 * in the section `upc_shared`; the runtime copies that image into every thread's segment at
 * start-up (after its own control block). The runtime's main registers the section; a program
 * with its own main that has one calls this before portico_upc_init. UPC_SHARED_STATIC marks a C
 * object as such a part, and portico_upc_static_ptr gives the pointer-to-shared (thread 0, phase
 * 0) of its first element, from which UPC arithmetic reaches the others. */
#define UPC_SHARED_STATIC __attribute__((section("upc_shared"), used))
void portico_upc_register_statics(const void *start, const void *stop);
upc_shared_ptr_t portico_upc_static_ptr(const void *object);
void portico_upc_finalize(void);

#ifdef __cplusplus
}
#endif
#endif /* PORTICO_UPC_ABI_H */
