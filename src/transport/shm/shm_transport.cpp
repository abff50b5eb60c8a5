// SPDX-License-Identifier: BSD-3-Clause
#include "transport/shm/shm_transport.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <iterator>
#include <new>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <system_error>
#include <unistd.h>

#include "common/fence.hpp"
#include "common/guarded_copy.hpp"
#include "common/futex.hpp"
#include "common/log.hpp"
#include "common/small_set.hpp"
#include "transport/shm/hello.hpp"
#include "transport/shm/sizing.hpp"

namespace portico::transport::shm {

namespace {

struct alignas(kCacheLine) SegmentHeader {
    uint32_t magic;
    uint32_t version;
    uint64_t ring_bytes;
    // Single copy: each side publishes the address of its probe word; the other side tries to read
    // it with process_vm_readv and publishes whether that worked (0 unknown, 1 yes, -1 no).
    // Index 0 is the connecting side, 1 the accepting side.
    std::atomic<uint64_t> probe_addr[2];
    std::atomic<int32_t> can_read[2]; // [i]: side i can read (and write) side 1-i
    std::atomic<uint32_t> goodbye[2]; // [i]: side i closes the link on purpose (farewell)
};

constexpr uint64_t kProbeMagic = 0x706f727469636f21ull; // "portico!"
const volatile uint64_t g_probe_word = kProbeMagic;

size_t segment_bytes(size_t ring_bytes) { return sizeof(SegmentHeader) + 2 * (sizeof(RingControl) + ring_bytes); }

RingView ring_at(void *seg, size_t ring_bytes, int which) {
    auto *base =
        static_cast<std::byte *>(seg) + sizeof(SegmentHeader) + size_t(which) * (sizeof(RingControl) + ring_bytes);
    return RingView(reinterpret_cast<RingControl *>(base), base + sizeof(RingControl), ring_bytes);
}

void set_nonblocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

char g_listen_marker, g_wake_marker;
// Marks a pending accept's epoll data (links and markers are at least 2-byte aligned).
constexpr uint64_t kPendingTag = 1;

// Copies n bytes starting at logical offset off of a gather list. Returns false on a fault.
bool gather_copy(std::byte *dst, const iovec *iov, int iovcnt, size_t off, size_t n) {
    int i = 0;
    while (i < iovcnt && off >= iov[i].iov_len) off -= iov[i++].iov_len;
    bool ok = true;
    while (n > 0 && i < iovcnt) {
        size_t take = std::min(n, iov[i].iov_len - off);
        if (!guarded_copy(dst, static_cast<const std::byte *>(iov[i].iov_base) + off, take)) {
            std::memset(dst, 0, take);
            ok = false;
        }
        dst += take;
        n -= take;
        off = 0;
        ++i;
    }
    return ok;
}

// The whole of a gather list, for a message that fits one frame: gather_copy without the search
// for a starting piece, inlined into the send.
[[gnu::always_inline]] inline bool copy_pieces(std::byte *dst, const Gather &payload) {
    for (int i = 0; i < payload.iovcnt; ++i) {
        if (!guarded_copy(dst, payload.iov[i].iov_base, payload.iov[i].iov_len)) return false;
        dst += payload.iov[i].iov_len;
    }
    return true;
}

} // namespace

// The state of one message being pushed, frame by frame.
struct Cursor {
    const iovec *iov = nullptr;
    int iovcnt = 0;
    size_t total = 0;
    size_t sent = 0;
    bool header_sent = false;
    bool fault = false;
};

struct OutMessage {
    FrameHeader h;
    std::vector<iovec> iov;
    std::vector<std::byte> owned;
    Cursor cur;
    uint64_t token = 0;
};

class ShmLink final : public Link {
public:
    int sock = -1;
    void *seg = nullptr;
    size_t seg_bytes = 0;
    pid_t os_pid = 0;
    RingView tx, rx;
    SpinLock tx_lock; // the producer side of tx (a short hold: copying one message in)
    std::deque<OutMessage> backlog;
    bool dead = false;                 // guarded by tx_lock
    std::atomic<bool> reported{false}; // on_link_failed delivered (set under the poll lock, read anywhere)
    int side = 0;                      // 0: we connected, 1: we accepted
    size_t frame_max = 0;              // the largest frame payload its rings take
    bool probed = false;
    // The consumer's head when a queued message last found no room (see has_pending).
    std::atomic<uint64_t> head_seen{0};

    SegmentHeader *header() const { return static_cast<SegmentHeader *>(seg); }

    ~ShmLink() override {
        if (sock >= 0) ::close(sock);
        if (seg) munmap(seg, seg_bytes);
    }

    int read_peer(const iovec *local, int n, uint64_t remote_addr, size_t len) override;
    int write_peer(const iovec *local, int n, uint64_t remote_addr, size_t len) override;

    void poke() {
        char b = 0;
        [[maybe_unused]] ssize_t n = ::send(sock, &b, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
    }
};

ShmTransport::ShmTransport(uint32_t nid, uint32_t pid, const ShmConfig &cfg) : cfg_(cfg) {
    if (cfg_.ring_bytes < sizing::kMinRingBytes || cfg_.ring_bytes > kMaxRingBytes ||
        (cfg_.ring_bytes & (cfg_.ring_bytes - 1)) != 0)
        throw std::invalid_argument("PORTICO_SHM_RING_BYTES must be a power of two within [4 KiB, 1 GiB]");
    max_frame_payload_ = sizing::frame_payload(cfg_.ring_bytes, kMaxWireHeaderBytes, kCacheLine);
    links_.reset(new ShmLink *[cfg_.max_links]);
    if (cfg_.single_copy) {
        // Under Yama ptrace_scope=1 only ancestors may use process_vm_readv on us; let peers of the
        // same user in (PORTICO_SHM_SINGLE_COPY=0 keeps the default and uses ring copies instead).
        prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
    }

    os_pid_ = ::getpid();
    dir_ = endpoint_directory(cfg_.directory);
    reservation_ = std::make_unique<Reservation>(dir_, PeerId{nid, pid});
    listen_fd_ = reservation_->listen_fd();
    self_ = {nid, pid};

    epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
    wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = &g_listen_marker;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev);
    ev.data.ptr = &g_wake_marker;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
}

ShmTransport::~ShmTransport() {
    farewell();
    for (auto &p : pending_accepts_) ::close(p->fd);
    owned_.clear();       // closes the sockets: peers see the hang-up
    reservation_.reset(); // the names go, then the listening socket
    if (epoll_fd_ >= 0) ::close(epoll_fd_);
    if (wake_fd_ >= 0) ::close(wake_fd_);
}

void ShmTransport::add_link(std::unique_ptr<ShmLink> l, bool use_for_send) {
    // Caller holds links_mutex_.
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.ptr = l.get();
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, l->sock, &ev);
    if (use_for_send) send_links_[l->peer.key()] = l.get();
    size_t n = nlinks_.load(std::memory_order_relaxed);
    links_[n] = l.get();
    owned_.push_back(std::move(l));
    nlinks_.store(n + 1, std::memory_order_release);
}

namespace {

// "0a000001/5 (process 1234)", for messages.
std::string describe(PeerId id, pid_t os_pid) {
    char text[64];
    std::snprintf(text, sizeof text, "%08x/%u (process %d)", id.nid, id.pid, static_cast<int>(os_pid));
    return text;
}

// A connection to the endpoint `to`, if it exists and belongs to our user (never hand our memory
// to another user's process); -1 otherwise. *os_pid: the process behind it.
int connect_same_user(const std::string &dir, PeerId to, pid_t *os_pid) {
    sockaddr_un addr;
    const socklen_t len = rendezvous_address(dir, to, &addr);
    int s = len ? ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0) : -1;
    if (s < 0) return -1;
    if (::connect(s, reinterpret_cast<sockaddr *>(&addr), len) != 0) {
        log_debug("shm: no endpoint %08x/%u: %s", to.nid, to.pid, std::strerror(errno));
        ::close(s);
        return -1;
    }
    ucred cr{};
    socklen_t crl = sizeof cr;
    if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cr, &crl) != 0 || cr.uid != geteuid()) {
        log_error("shm: endpoint %08x/%u belongs to another user; refusing", to.nid, to.pid);
        ::close(s);
        return -1;
    }
    *os_pid = cr.pid;
    return s;
}

// A new link segment in a memfd (*mfd, to pass to the peer): its header and two empty rings.
// nullptr if the memory cannot be had.
void *create_segment(size_t ring_bytes, bool single_copy, int *mfd) {
    const size_t bytes = segment_bytes(ring_bytes);
    *mfd = memfd_create("portico-link", MFD_CLOEXEC);
    if (*mfd < 0) return nullptr;
    void *seg = ftruncate(*mfd, static_cast<off_t>(bytes)) == 0
                    ? mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, *mfd, 0)
                    : MAP_FAILED;
    if (seg == MAP_FAILED) {
        ::close(*mfd);
        return nullptr;
    }
    auto *sh = new (seg) SegmentHeader{};
    sh->magic = kHelloMagic;
    sh->version = kSegmentVersion;
    sh->ring_bytes = ring_bytes;
    sh->probe_addr[0].store(single_copy ? reinterpret_cast<uint64_t>(&g_probe_word) : 0);
    for (int i = 0; i < 2; ++i) {
        auto *ctl = new (ring_at(seg, ring_bytes, i).control()) RingControl;
        ctl->tail.store(0);
        ctl->head.store(0);
        // Until the consumer has seen the link it may sleep without knowing it: the first frame wakes it.
        ctl->consumer_sleeping.store(1);
        ctl->producer_waiting.store(0);
    }
    return seg;
}

} // namespace

ShmLink *ShmTransport::connect_to(PeerId to) {
    if (nlinks_.load() >= cfg_.max_links) {
        log_error("shm: link table full (%zu links); raise PORTICO_SHM_MAX_LINKS", cfg_.max_links);
        return nullptr;
    }
    // The segment is made before connecting, so that the hello follows connect() at once: the
    // acceptor gives a connection a bounded time to send it, and a loaded machine may deschedule
    // us for long in memfd_create/ftruncate/mmap.
    int mfd = -1;
    void *seg = create_segment(cfg_.ring_bytes, cfg_.single_copy, &mfd);
    if (!seg) return nullptr;
    pid_t os_pid = 0;
    const int s = connect_same_user(dir_, to, &os_pid);
    if (s < 0) {
        ::close(mfd);
        munmap(seg, segment_bytes(cfg_.ring_bytes));
        return nullptr;
    }
    const Hello hello = make_hello(self_, to, cfg_.ring_bytes, cfg_.secret, LinkEnds{os_pid_, os_pid, geteuid()});
    const bool sent = send_hello(s, hello, mfd);
    ::close(mfd); // the peer has its own copy, or never will
    if (!sent) {
        munmap(seg, segment_bytes(cfg_.ring_bytes));
        ::close(s);
        return nullptr;
    }
    set_nonblocking(s);

    auto l = std::make_unique<ShmLink>();
    l->peer = to;
    l->sock = s;
    l->seg = seg;
    l->seg_bytes = segment_bytes(cfg_.ring_bytes);
    l->os_pid = os_pid;
    l->tx = ring_at(seg, cfg_.ring_bytes, 0);
    l->rx = ring_at(seg, cfg_.ring_bytes, 1);
    l->frame_max = max_frame_payload_;
    l->side = 0;
    ShmLink *raw = l.get();
    add_link(std::move(l), true);
    return raw;
}

void ShmTransport::accept_one(Receiver &) {
    // Caller holds poll_lock_. Nothing here waits for a connector: one that has not sent its
    // hello yet is kept pending and finished when its socket becomes readable (a silent or hostile
    // local process must never stall this endpoint's progress).
    for (;;) {
        int s = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (s < 0) return;
        ucred cr{};
        socklen_t crl = sizeof cr;
        if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cr, &crl) != 0 || cr.uid != geteuid()) {
            refuse("a connection from another user (uid " + std::to_string(cr.uid) + ")");
            ::close(s);
            continue;
        }
        if (try_hello(s, cr.pid)) continue;
        // The oldest has waited longest: it goes (unless its hello has come meanwhile).
        if (pending_accepts_.size() >= kMaxPendingAccepts)
            give_up_oldest("a connection that sent no hello (too many waiting)");
        auto p = std::make_unique<PendingAccept>(PendingAccept{s, cr.pid, monotonic_ns() + cfg_.hello_timeout_ns});
        watch_pending(*p);
        pending_accepts_.push_back(std::move(p));
    }
}

void ShmTransport::refused_by_peer(const ShmLink &l, char code) {
    const uint64_t n = refused_.fetch_add(1) + 1;
    if ((n & (n - 1)) == 0)
        log_error("shm: %s refused our link: %s (%llu refused so far)", describe(l.peer, l.os_pid).c_str(),
                  refusal_text(code), static_cast<unsigned long long>(n));
}

void ShmTransport::refuse(const std::string &what) {
    // Counted always, logged at 1, 2, 4, 8, ... refusals: a storm of connections must not turn
    // into a storm of log lines.
    const uint64_t n = refused_.fetch_add(1) + 1;
    if ((n & (n - 1)) == 0)
        log_error("shm: refused %s (%llu refused so far)", what.c_str(), static_cast<unsigned long long>(n));
}

void ShmTransport::watch_pending(const PendingAccept &p) {
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.u64 = reinterpret_cast<uintptr_t>(&p) | kPendingTag;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, p.fd, &ev);
}

void ShmTransport::give_up_oldest(const char *why) {
    const PendingAccept p = *pending_accepts_.front();
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, p.fd, nullptr);
    pending_accepts_.erase(pending_accepts_.begin());
    // A last read: its hello may be there, come after the caller's epoll_wait returned or while
    // this process was descheduled.
    if (!try_hello(p.fd, p.os_pid)) {
        refuse(why);
        ::close(p.fd);
    }
}

void ShmTransport::service_pending(PendingAccept *p) {
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, p->fd, nullptr);
    if (!try_hello(p->fd, p->os_pid)) {
        // Nothing to read after all: the event was about a connection that an earlier event of
        // this batch settled, and whose memory this one took. It waits on.
        watch_pending(*p);
        return;
    }
    std::erase_if(pending_accepts_, [p](const std::unique_ptr<PendingAccept> &q) { return q.get() == p; });
}

void ShmTransport::expire_pending(uint64_t before) {
    // Those whose deadline passed before the caller began looking at its sockets, oldest first
    // (the list is in deadline order).
    while (!pending_accepts_.empty() && pending_accepts_.front()->deadline_ns < before)
        give_up_oldest("a connection that sent no hello in time");
}

PendingAccept *ShmTransport::pending_of(void *tag) const {
    for (const auto &p : pending_accepts_)
        if (p.get() == tag) return p.get();
    return nullptr;
}

bool ShmTransport::try_hello(int s, pid_t os_pid) {
    // False if nothing has arrived yet; true if the connection is settled (a link, or refused and
    // closed).
    Hello hello{};
    int mfd = -1;
    const ssize_t n = receive_hello(s, &hello, &mfd);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
    const bool ring_ok = hello.ring_bytes >= sizing::kMinRingBytes && hello.ring_bytes <= kMaxRingBytes &&
                         (hello.ring_bytes & (hello.ring_bytes - 1)) == 0;
    const bool well_formed = n == static_cast<ssize_t>(sizeof hello) && hello.magic == kHelloMagic &&
                             hello.version == kHelloVersion && ring_ok && mfd >= 0;
    if (well_formed) {
        // The job's secret, before anything of the peer's is mapped: a link of another job (or of
        // a process with a secret when we have none, or the other way round) is refused, counted,
        // and told why in one byte, so that its side can say what happened.
        const char *refused = nullptr;
        Refusal why{};
        const bool proven = (hello.flags & kHelloProven) != 0;
        if (PeerId{hello.to_nid, hello.to_pid} != self_) {
            refused = "a link meant for another endpoint";
            why = Refusal::NotAddressedHere;
        } else if (cfg_.secret.empty() && proven) {
            refused = "a link from a process with a job secret (this process has none)";
            why = Refusal::NoSecretHere;
        } else if (!cfg_.secret.empty() && !proven) {
            refused = "a link from a process without the job's secret";
            why = Refusal::NoProof;
        } else if (proven && !hello_proven(hello, cfg_.secret, LinkEnds{os_pid, os_pid_, geteuid()})) {
            refused = "a link from a process of another job (its job secret differs)";
            why = Refusal::OtherSecret;
        }
        if (refused) {
            refuse(std::string(refused) + " from " + describe(PeerId{hello.nid, hello.pid}, os_pid));
            const char code = static_cast<char>(why);
            [[maybe_unused]] ssize_t told = ::send(s, &code, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
            ::close(mfd);
            ::close(s);
            return true;
        }
    }
    struct stat st {};
    void *seg = MAP_FAILED;
    size_t bytes = ring_ok ? segment_bytes(hello.ring_bytes) : 0;
    if (well_formed && fstat(mfd, &st) == 0 && static_cast<size_t>(st.st_size) >= bytes)
        seg = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
    if (mfd >= 0) ::close(mfd);
    if (seg == MAP_FAILED) {
        refuse(n == 0 ? "a connection closed before its hello" : "a connection with a malformed hello");
        ::close(s);
        return true;
    }
    auto l = std::make_unique<ShmLink>();
    l->peer = {hello.nid, hello.pid};
    l->sock = s;
    l->seg = seg;
    l->seg_bytes = bytes;
    l->os_pid = os_pid;
    l->tx = ring_at(seg, hello.ring_bytes, 1);
    l->rx = ring_at(seg, hello.ring_bytes, 0);
    // The connector chose the rings; frames must fit them, should its be smaller than ours.
    l->frame_max =
        std::min(max_frame_payload_, sizing::frame_payload(size_t(hello.ring_bytes), kMaxWireHeaderBytes, kCacheLine));
    l->side = 1;
    if (cfg_.single_copy) {
        l->header()->probe_addr[1].store(reinterpret_cast<uint64_t>(&g_probe_word));
        probe_peer(*l);
    }
    std::lock_guard g(links_mutex_);
    if (nlinks_.load() >= cfg_.max_links) {
        log_error("shm: link table full; refusing a connection");
        return true; // l's destructor closes and unmaps
    }
    bool use = send_links_.find(l->peer.key()) == send_links_.end();
    add_link(std::move(l), use);
    return true;
}

ShmLink *ShmTransport::link_for(PeerId to) {
    // Links live as long as the transport, so the last one used can be checked without the lock.
    ShmLink *last = last_send_link_.load(std::memory_order_acquire);
    if (last && last->peer == to && !last->reported.load(std::memory_order_relaxed)) return last;
    std::lock_guard g(links_mutex_);
    auto it = send_links_.find(to.key());
    ShmLink *l = it != send_links_.end() ? it->second : connect_to(to);
    if (l) last_send_link_.store(l, std::memory_order_release);
    return l;
}

namespace {
// The links whose doorbell a drain run owes a look (docs/FASTPATH.md §2): the frames this thread
// sends while it drains a ring (acks, replies) are published with a release store each, and the
// fence that must come between a record and the look at the consumer's "sleeping" flag is the
// one the drain ends with anyway. One fence per run of frames instead of one per answer (a run
// that answers on more links than the set holds pays their fences at once).
struct OwedDoorbells {
    const ShmTransport *owner = nullptr; // the transport whose drain_link runs on this thread
    SmallSet<ShmLink *, 4> links;
};
__attribute__((tls_model("initial-exec"))) thread_local OwedDoorbells t_owed;

// Opens a drain run on this thread, unless one is open already (the outermost closes it).
class DrainRun {
public:
    explicit DrainRun(const ShmTransport *t) : outermost_(t_owed.owner == nullptr) {
        if (outermost_) t_owed.owner = t;
    }
    ~DrainRun() {
        if (outermost_) t_owed.owner = nullptr;
    }
    DrainRun(const DrainRun &) = delete;
    DrainRun &operator=(const DrainRun &) = delete;
    bool outermost() const { return outermost_; }

private:
    bool outermost_;
};

// The look itself, after a fence that follows every record pushed on l: whether the consumer
// sleeps and this producer is the one to ring it (the flag is taken, so one doorbell per sleep).
bool take_sleeping_consumer(ShmLink &l) {
    auto &sleeping = l.tx.control()->consumer_sleeping;
    return sleeping.load(std::memory_order_relaxed) && sleeping.exchange(0);
}
} // namespace

bool ShmTransport::push_frames(ShmLink &l, OutMessage &m, bool defer_wakeup) {
    // Caller holds l.tx_lock.
    Cursor &c = m.cur;
    bool pushed = false, complete = true;
    while (!c.header_sent || c.sent < c.total) {
        const size_t chunk = std::min(l.frame_max, c.total - c.sent);
        const uint64_t index = c.header_sent ? 1 : 0;
        const size_t header_bytes = frame_header_bytes(m.h, index);
        std::byte *p = l.tx.reserve(header_bytes + chunk);
        if (!p) {
            complete = false;
            break;
        }
        uint8_t flags = 0;
        if (!gather_copy(p + header_bytes, c.iov, c.iovcnt, c.sent, chunk)) {
            if (!c.header_sent) return false; // nothing sent yet: the caller reports the fault
            flags = kFrameSourceFault;
            c.fault = true;
        }
        write_frame_header(p, m.h, c.total, index, static_cast<uint32_t>(chunk), flags);
        l.tx.commit();
        pushed = true;
        c.header_sent = true;
        c.sent += chunk;
    }
    if (pushed) published(l, defer_wakeup);
    return complete;
}

void ShmTransport::published(ShmLink &l, bool defer_wakeup) {
    // An answer sent while this thread drains: the drain's closing fence serves it.
    if (t_owed.owner == this && !defer_wakeup && t_owed.links.add(&l)) return;
    // Pairs with the consumer's store of consumer_sleeping before its last look at the ring.
    full_fence();
    if (take_sleeping_consumer(l)) {
        if (defer_wakeup) {
            // In a bundle: the system call waits for PtlEndBundle (§3.17, note 17).
            std::lock_guard g(deferred_mutex_);
            deferred_.push_back(&l);
            have_deferred_.store(true, std::memory_order_release);
        } else {
            l.poke();
        }
    }
}

SendStatus ShmTransport::send(PeerId to, const FrameHeader &h, const Gather &payload, uint64_t token, bool copy_payload,
                              bool defer_wakeup, Hold) {
    ShmLink *l = link_for(to);
    if (!l) return SendStatus::Unreachable;
    std::unique_lock g(l->tx_lock);
    if (l->dead) return SendStatus::Unreachable;
    if (l->backlog.empty() && payload.length <= l->frame_max) {
        // One frame with room for it, nearly every small message: no OutMessage, no cursor.
        const size_t header_bytes = wire_header_bytes(h);
        if (std::byte *p = l->tx.reserve(header_bytes + payload.length)) {
            // A reservation not committed publishes nothing.
            if (!copy_pieces(p + header_bytes, payload)) return SendStatus::SourceFault;
            write_frame_header(p, h, payload.length, 0, static_cast<uint32_t>(payload.length));
            l->tx.commit();
            published(*l, defer_wakeup);
            return SendStatus::Sent;
        }
    }
    OutMessage direct;
    direct.h = h;
    direct.cur = Cursor{payload.iov, payload.iovcnt, payload.length, 0, false, false};
    if (l->backlog.empty()) {
        const bool complete = push_frames(*l, direct, defer_wakeup);
        if (!direct.cur.header_sent && !complete && direct.cur.total > 0) {
            // Either the first frame faulted or there was no room at all; tell which.
            std::vector<std::byte> probe(std::min(max_frame_payload_, direct.cur.total));
            if (!gather_copy(probe.data(), payload.iov, payload.iovcnt, 0, probe.size()))
                return SendStatus::SourceFault;
        }
        if (complete) return direct.cur.fault ? SendStatus::SourceFault : SendStatus::Sent;
    }
    // Slow path: keep the rest for later, in order behind anything already waiting.
    OutMessage &m = l->backlog.emplace_back();
    m.h = h;
    m.token = token;
    m.cur = direct.cur;
    if (copy_payload) {
        const size_t rest = m.cur.total - m.cur.sent;
        m.owned.resize(rest);
        if (!gather_copy(m.owned.data(), payload.iov, payload.iovcnt, m.cur.sent, rest)) m.cur.fault = true;
        m.iov.push_back({m.owned.data(), rest});
        m.cur.total = rest; // positions now count from the copy
        m.cur.sent = 0;
    } else {
        m.iov.assign(payload.iov, payload.iov + payload.iovcnt);
    }
    m.cur.iov = m.iov.data();
    m.cur.iovcnt = static_cast<int>(m.iov.size());
    if (copy_payload && direct.cur.header_sent) {
        // The header already left; what remains are Data frames of the copied bytes.
        m.cur.header_sent = true;
    }
    if (l->backlog.size() == 1) {
        backlogged_.fetch_add(1);
        // Not a fresh read of head: had the consumer emptied the ring since our failed reserve,
        // has_pending() would see no change and we could sleep on a ring with room.
        l->head_seen.store(l->tx.head_seen_by_producer(), std::memory_order_relaxed);
    }
    g.unlock();
    // Whoever polls flushes the backlog. If the progress thread sleeps in wait() with nothing
    // else to do, wake it: it arms for this backlog before it sleeps again.
    if (sleeping_.load(std::memory_order_seq_cst)) {
        uint64_t one = 1;
        [[maybe_unused]] ssize_t w = ::write(wake_fd_, &one, sizeof one);
    }
    return SendStatus::Queued;
}

int ShmTransport::flush_backlog(ShmLink &l, Receiver &r) {
    int work = 0;
    std::vector<std::pair<uint64_t, bool>> done;
    {
        std::lock_guard g(l.tx_lock);
        while (!l.backlog.empty()) {
            OutMessage &m = l.backlog.front();
            if (!push_frames(l, m, false)) {
                if (!m.cur.header_sent) {
                    // No room, or the first frame faulted; a fault ends the message here.
                    std::vector<std::byte> probe(std::min(max_frame_payload_, std::max<size_t>(m.cur.total, 1)));
                    if (m.cur.total > 0 && !gather_copy(probe.data(), m.cur.iov, m.cur.iovcnt, 0, probe.size())) {
                        done.emplace_back(m.token, true);
                        l.backlog.pop_front();
                        ++work;
                        continue;
                    }
                }
                // No room: arm_sleep() asks the consumer for a doorbell if we are about to sleep
                // with this, and has_pending() says when the consumer has made room since.
                l.head_seen.store(l.tx.head_seen_by_producer(), std::memory_order_relaxed);
                break;
            }
            done.emplace_back(m.token, m.cur.fault);
            l.backlog.pop_front();
            ++work;
        }
        if (l.backlog.empty() && work) backlogged_.fetch_sub(1);
    }
    for (auto &[token, fault] : done) r.on_send_complete(token, true, fault);
    return work;
}

void ShmTransport::probe_peer(ShmLink &l) {
    l.probed = true;
    const uint64_t addr = l.header()->probe_addr[1 - l.side].load();
    uint64_t value = 0;
    iovec local{&value, sizeof value};
    iovec remote{reinterpret_cast<void *>(addr), sizeof value};
    const bool ok =
        addr && process_vm_readv(l.os_pid, &local, 1, &remote, 1, 0) == sizeof value && value == kProbeMagic;
    if (!ok) log_debug("shm: no single copy with %08x/%u (%s)", l.peer.nid, l.peer.pid, std::strerror(errno));
    l.header()->can_read[l.side].store(ok ? 1 : -1);
}

bool ShmTransport::direct_access(PeerId to, size_t length) {
    if (length < cfg_.single_copy_bytes) return false;
    ShmLink *l = link_for(to);
    return l && l->header()->can_read[1 - l->side].load(std::memory_order_acquire) == 1;
}

namespace {
int vm_copy(pid_t pid, const iovec *local, int n, uint64_t remote_addr, size_t len, bool write) {
    // The kernel takes at most IOV_MAX pieces per call and may copy less than asked; loop.
    size_t done = 0;
    int first = 0;
    size_t skip = 0; // bytes of local[first] already copied
    while (done < len) {
        iovec lv[64];
        int k = 0;
        size_t batch = 0;
        for (int i = first; i < n && k < 64; ++i, ++k) {
            const size_t off = i == first ? skip : 0;
            lv[k].iov_base = static_cast<std::byte *>(local[i].iov_base) + off;
            lv[k].iov_len = local[i].iov_len - off;
            batch += lv[k].iov_len;
        }
        batch = std::min(batch, len - done);
        iovec rv{reinterpret_cast<void *>(remote_addr + done), batch};
        ssize_t got = write ? process_vm_writev(pid, lv, static_cast<unsigned long>(k), &rv, 1, 0)
                            : process_vm_readv(pid, lv, static_cast<unsigned long>(k), &rv, 1, 0);
        if (got < 0) return errno;
        if (got == 0) return EFAULT;
        done += static_cast<size_t>(got);
        size_t adv = static_cast<size_t>(got) + skip;
        while (first < n && adv >= local[first].iov_len) adv -= local[first++].iov_len;
        skip = adv;
    }
    return 0;
}
} // namespace

int ShmLink::read_peer(const iovec *local, int n, uint64_t remote_addr, size_t len) {
    return vm_copy(os_pid, local, n, remote_addr, len, false);
}

int ShmLink::write_peer(const iovec *local, int n, uint64_t remote_addr, size_t len) {
    return vm_copy(os_pid, local, n, remote_addr, len, true);
}

int ShmTransport::drain_link(ShmLink &l, Receiver &r, int budget) {
    if (cfg_.single_copy && !l.probed && l.header()->probe_addr[1 - l.side].load(std::memory_order_acquire) != 0)
        probe_peer(l);
    int work = 0;
    const DrainRun drain(this);
    FrameRun run(r, /*fences_after=*/true);
    while (work < budget) {
        size_t bytes = 0;
        bool corrupt = false;
        const std::byte *body = l.rx.peek(&bytes, &corrupt);
        if (!body) {
            run.end();
            if (corrupt) {
                malformed_.fetch_add(1);
                log_error("shm: corrupt ring from %08x/%u; closing the link", l.peer.nid, l.peer.pid);
                fail_link(l, r);
            }
            break;
        }
        FrameHeader h;
        // Copied first: the peer can still write the ring.
        const size_t header_bytes = read_wire_header(body, bytes, &h);
        if (header_bytes == 0 || !frame_is_sane(h, bytes - header_bytes)) {
            run.end();
            malformed_.fetch_add(1);
            log_error("shm: malformed frame from %08x/%u; closing the link", l.peer.nid, l.peer.pid);
            fail_link(l, r);
            break;
        }
        run.frame(l, h, body + header_bytes);
        l.rx.release();
        ++work;
    }
    run.end();
    if (work) {
        // head first, then the fence, then producer_waiting: a producer that set it and then found
        // head unchanged is sure to be woken. The same fence follows the answers sent meanwhile.
        l.rx.publish_head();
        full_fence();
        run.published(); // the receiver's own looks after the run share this fence
        auto &waiting = l.rx.control()->producer_waiting;
        if (waiting.load(std::memory_order_relaxed) && waiting.exchange(0)) l.poke();
    } else if (drain.outermost() && t_owed.links.count > 0) {
        full_fence();
    }
    if (drain.outermost()) {
        for (unsigned i = 0; i < t_owed.links.count; ++i)
            if (take_sleeping_consumer(*t_owed.links.items[i])) t_owed.links.items[i]->poke();
        t_owed.links.count = 0;
    }
    return work;
}

void ShmTransport::farewell() {
    // Said in the segment, which outlives the peer's socket: no frame, no room needed. The lock
    // may be held by a thread that will not run again (see TcpTransport::farewell).
    if (!lock_within(links_mutex_, std::chrono::milliseconds(100))) return;
    std::lock_guard g(links_mutex_, std::adopt_lock);
    for (auto &l : owned_)
        if (l->seg) l->header()->goodbye[l->side].store(1, std::memory_order_release);
}

void ShmTransport::fail_link(ShmLink &l, Receiver &r) {
    // Caller holds the poll lock.
    if (l.reported) return;
    l.reported = true;
    l.said_goodbye = l.seg && l.header()->goodbye[1 - l.side].load(std::memory_order_acquire) != 0;
    std::deque<OutMessage> abandoned;
    {
        std::lock_guard g(l.tx_lock);
        l.dead = true;
        if (!l.backlog.empty()) backlogged_.fetch_sub(1);
        abandoned.swap(l.backlog);
    }
    bool last = true;
    {
        std::lock_guard g(links_mutex_);
        auto it = send_links_.find(l.peer.key());
        if (it != send_links_.end() && it->second == &l) send_links_.erase(it);
        epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, l.sock, nullptr);
        // The peer's answers may still be in the ring of another link with it (each side answers
        // on the link it opened; a peer that exits hangs them all up, seen here in any order).
        // A link to another process that has since taken the peer's id does not count.
        const size_t n = nlinks_.load(std::memory_order_acquire);
        for (size_t i = 0; i < n; ++i) {
            const ShmLink *o = links_[i];
            if (o != &l && o->peer == l.peer && o->os_pid == l.os_pid && !o->reported) last = false;
        }
    }
    for (OutMessage &m : abandoned) r.on_send_complete(m.token, false, m.cur.fault);
    r.on_link_failed(l, last);
}

void ShmTransport::service_events(const void *events, int count, Receiver &r) {
    // Caller holds poll_lock_. Reads first, expires after: a connection whose hello is already
    // here is a link, however late this process comes to read it (descheduled acceptors of a
    // 256-rank job used to drop their own peers' connections "for want of a hello").
    const uint64_t started = monotonic_ns();
    const auto *evs = static_cast<const epoll_event *>(events);
    for (int i = 0; i < count; ++i) {
        void *p = evs[i].data.ptr;
        if (p == &g_listen_marker) {
            accept_one(r);
        } else if (evs[i].data.u64 & kPendingTag) {
            // Looked up, not trusted: an earlier event of this batch may have dropped it.
            if (PendingAccept *pa = pending_of(reinterpret_cast<void *>(evs[i].data.u64 & ~kPendingTag)))
                service_pending(pa);
        } else if (p == &g_wake_marker) {
            uint64_t v;
            [[maybe_unused]] ssize_t rd = ::read(wake_fd_, &v, sizeof v);
        } else {
            auto *l = static_cast<ShmLink *>(p);
            if (l->reported) continue;
            char buf[256];
            ssize_t rd;
            char refusal = 0; // doorbells are zeros; an acceptor that refuses our link says why
            while ((rd = ::recv(l->sock, buf, sizeof buf, MSG_DONTWAIT)) > 0)
                for (ssize_t k = 0; k < rd; ++k)
                    if (buf[k] != 0) refusal = buf[k];
            if (rd == 0 || (evs[i].events & (EPOLLHUP | EPOLLERR | EPOLLRDHUP))) {
                if (refusal && l->side == 0 && *refusal_text(refusal)) refused_by_peer(*l, refusal);
                // Deliver everything the peer sent before it went away, then report it.
                while (drain_link(*l, r, 1 << 20) > 0) {
                }
                fail_link(*l, r);
            }
        }
    }
    if (!pending_accepts_.empty()) expire_pending(started);
}

int ShmTransport::poll(Receiver &r) {
    const size_t n = nlinks_.load(std::memory_order_acquire);
    // The rings are looked at without the lock first: a waiting thread calls this in a loop, and
    // an empty turn should cost a few loads, not a lock. The turn count (racy, which is fine)
    // spaces out the looks at the sockets: new connections, hang-ups. A look is an epoll_wait
    // system call, and a frame that comes meanwhile waits for it: one in 1024 empty turns (tens
    // of microseconds of spinning) rather than one in 128 keeps that off most round trips.
    const unsigned turn = poll_turns_.load(std::memory_order_relaxed) + 1;
    poll_turns_.store(turn, std::memory_order_relaxed);
    const bool idle = backlogged_.load(std::memory_order_relaxed) == 0 && !has_pending();
    if (idle && (turn & 1023) != 0) return 0;
    std::unique_lock lock(poll_lock_, std::try_to_lock);
    if (!lock.owns_lock()) return 0; // somebody else is polling right now
    if (idle) return look_at_sockets(r);
    int work = 0;
    for (size_t i = 0; i < n; ++i) {
        ShmLink &l = *links_[i];
        if (!l.reported) work += drain_link(l, r, 64);
    }
    if (backlogged_.load(std::memory_order_relaxed) > 0)
        for (size_t i = 0; i < n; ++i)
            if (!links_[i]->reported) work += flush_backlog(*links_[i], r);
    if ((turn & 4095) == 0) work += look_at_sockets(r);
    return work;
}

int ShmTransport::look_at_sockets(Receiver &r) {
    // Caller holds poll_lock_. While the progress thread sleeps armed the doorbells are its own:
    // a one-shot poll (PtlEQGet, PtlCTGet, the first look of a wait) that ate one would leave the
    // frames it announced to nobody.
    if (sleeping_.load(std::memory_order_relaxed)) return 0;
    epoll_event evs[16];
    const int k = epoll_wait(epoll_fd_, evs, 16, 0);
    if (k <= 0) return 0;
    service_events(evs, k, r);
    return k;
}

void ShmTransport::arm_sleep() {
    {
        // Under the poll lock: a poller that is reading doorbells right now finishes first, and
        // any later one sees sleeping_ and leaves them alone (see poll()).
        std::lock_guard g(poll_lock_);
        sleeping_.store(true, std::memory_order_seq_cst);
    }
    const size_t n = nlinks_.load(std::memory_order_acquire);
    const bool backlog = backlogged_.load(std::memory_order_relaxed) > 0;
    for (size_t i = 0; i < n; ++i) {
        ShmLink &l = *links_[i];
        if (l.reported) continue;
        l.rx.control()->consumer_sleeping.store(1, std::memory_order_relaxed);
        // A producer waiting for room only needs the consumer's doorbell while it sleeps: a
        // polling producer would turn every drained frame into a system call on the other side.
        if (backlog) {
            std::lock_guard g(l.tx_lock);
            if (!l.backlog.empty()) l.tx.control()->producer_waiting.store(1, std::memory_order_relaxed);
        }
    }
    full_fence();
}

void ShmTransport::disarm_sleep() {
    sleeping_.store(false, std::memory_order_relaxed);
    const size_t n = nlinks_.load(std::memory_order_acquire);
    for (size_t i = 0; i < n; ++i) {
        links_[i]->rx.control()->consumer_sleeping.store(0, std::memory_order_relaxed);
        links_[i]->tx.control()->producer_waiting.store(0, std::memory_order_relaxed);
    }
}

void ShmTransport::wait(Receiver &r, int timeout_ms) {
    epoll_event evs[32];
    int k = epoll_wait(epoll_fd_, evs, 32, timeout_ms);
    if (k <= 0) return;
    std::lock_guard lock(poll_lock_);
    service_events(evs, k, r);
}

void ShmTransport::flush_wakeups() {
    if (!have_deferred_.load(std::memory_order_acquire)) return;
    std::vector<ShmLink *> owed;
    {
        std::lock_guard g(deferred_mutex_);
        owed.swap(deferred_);
        have_deferred_.store(false, std::memory_order_release);
    }
    for (ShmLink *l : owed) l->poke();
}

bool ShmTransport::has_pending() const {
    // Frames to deliver, or queued messages whose ring the consumer has made room in since the
    // last try (after arm_sleep() the consumer rings our doorbell for any later room).
    const size_t n = nlinks_.load(std::memory_order_acquire);
    const bool backlog = backlogged_.load(std::memory_order_relaxed) > 0;
    for (size_t i = 0; i < n; ++i) {
        const ShmLink &l = *links_[i];
        if (l.reported) continue;
        if (!l.rx.empty()) return true;
        if (backlog &&
            l.tx.control()->head.load(std::memory_order_acquire) != l.head_seen.load(std::memory_order_relaxed))
            return true;
    }
    return false;
}

void ShmTransport::interrupt() {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t w = ::write(wake_fd_, &one, sizeof one);
}

void ShmTransport::flush(Receiver &r, int timeout_ms) {
    const uint64_t deadline_polls = static_cast<uint64_t>(timeout_ms);
    for (uint64_t i = 0; backlogged_.load() > 0 && i < deadline_polls; ++i) {
        if (poll(r) == 0) wait(r, 1);
    }
}

} // namespace portico::transport::shm
