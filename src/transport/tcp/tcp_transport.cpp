// SPDX-License-Identifier: BSD-3-Clause
#include "transport/tcp/tcp_transport.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <system_error>
#include <unistd.h>

#include "common/futex.hpp"
#include "common/guarded_copy.hpp"
#include "common/log.hpp"
#include "common/spin_lock.hpp"
#include "common/netif.hpp"
#include "transport/tcp/frame_decoder.hpp"
#include "transport/tcp/handshake.hpp"

namespace portico::transport::tcp {

namespace {

constexpr int kMaxIov = 64;
constexpr int kMaxFramesPerWrite = 16;
constexpr size_t kMaxBytesPerWrite = 1 << 20;
constexpr size_t kZeroBytes = 64 * 1024;
// Coalescing: frames up to this size are copied into the held bytes; above, the copy would cost
// more than the system call it saves. Held bytes beyond kHeldFlushBytes are written at once.
constexpr size_t kCoalesceFrameMax = 4096;
constexpr size_t kHeldFlushBytes = 64 * 1024;
const std::byte g_zeros[kZeroBytes] = {};
// Epoll tags: even addresses (an odd tag is an accepted connection's id, see admit).
alignas(8) char g_listen_tag, g_wake_tag, g_timer_tag;

uint64_t now_ms() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return uint64_t(ts.tv_sec) * 1000 + uint64_t(ts.tv_nsec) / 1000000;
}

sockaddr_in address_of(uint32_t nid, uint32_t port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(nid);
    a.sin_port = htons(static_cast<uint16_t>(port));
    return a;
}

void tune_socket(int fd, const TcpConfig &cfg) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    // A peer whose machine vanished sends no FIN; keepalive (idle links) and the user timeout
    // (unacknowledged data) turn that into a failed link instead of a wait without end.
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    int idle = cfg.keepalive_idle_s, intvl = 5, cnt = 3;
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
    unsigned user_timeout = static_cast<unsigned>(idle + intvl * cnt) * 1000u;
    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout, sizeof user_timeout);
}

} // namespace

// A message on its way out: a stream of frames (header + at most max_frame_payload bytes each),
// cut from the payload on the fly so that a partial write can resume at any byte.
struct TcpOutMessage {
    FrameHeader h;
    uint64_t total = 0;         // payload bytes of the whole message
    const iovec *iov = nullptr; // payload bytes [base, total)
    int iovcnt = 0;
    uint64_t base = 0;
    uint64_t stream_pos = 0;          // bytes of headers and payload written so far
    uint64_t checked = 0;             // frames whose payload was found readable (or marked faulty)
    uint64_t fault_from = UINT64_MAX; // first frame whose payload could not be read
    uint64_t token = 0;
    std::vector<iovec> own_iov;
    std::vector<std::byte> owned;
};

enum class LinkState { Connecting, AwaitChallenge, AwaitHello, AwaitProof, Up, Dead };

class TcpLink final : public Link {
public:
    int fd = -1;
    bool accepted = false;
    uint64_t deadline_ms = 0;
    // Written by the poller under tx_mutex, read by senders under tx_mutex.
    LinkState state = LinkState::Connecting;
    std::mutex tx_mutex;
    std::deque<TcpOutMessage> backlog;
    // Frames held back to share a later write (acks, and coalesced requests: see send), under
    // tx_mutex; they always leave before anything else on the link.
    std::vector<std::byte> held;
    size_t held_off = 0;
    // What they are (under tx_mutex): an ack leaves at the next poll of any thread; requests
    // alone wait for the application's next poll or wait, or until they have waited coalesce_ns
    // (the progress thread's poll), so that a window of puts leaves in one write even while the
    // progress thread polls all along.
    bool held_ack = false;
    uint64_t held_requests_since_ns = 0; // 0: no request held
    bool held_listed = false;            // in TcpTransport::held_list_ (under held_mutex_)
    uint64_t last_request_ns = 0;        // when the last Hold::Burst frame was sent (under tx_mutex)
    uint64_t reads_at_request = 0;       // *reads then (under tx_mutex)
    // recv calls that brought bytes from this peer, on any of its links (two processes that
    // connect at the same moment keep a link each, and answers come on the other one): a request
    // sent after something came in answers it, as in a ping-pong, and is never held. Set when
    // the link comes up (under tx_mutex), counted by the poller, read by senders.
    std::shared_ptr<std::atomic<uint64_t>> reads;
    bool writing = false;            // EPOLLOUT requested (under tx_mutex)
    std::atomic<bool> broken{false}; // a write failed; the poller fails the link
    std::string remote;              // the peer's address, for messages
    // Poller only.
    bool ever_up = false;
    // Accepted, not authenticated yet: its key in accepting_ (0 once authenticated; ids grow, so
    // the smaller is the older), where it came from, and whether its hello names a peer of the job.
    uint64_t accept_id = 0;
    uint32_t from_addr = 0;
    bool known_peer = false;
    // Opened by us: connections opened so far, when to open the next one (fd -1 meanwhile), and
    // why the last one ended.
    unsigned attempts = 0;
    uint64_t retry_at_ms = 0;
    std::string last_failure;
    HandshakeMessage hello{}, challenge{}, incoming{};
    size_t incoming_got = 0;
    std::unique_ptr<FrameDecoder> decoder;
    std::atomic<bool> reported{false};

    ~TcpLink() override {
        if (fd >= 0) ::close(fd);
    }
    // After a write that may have taken the held bytes.
    void held_written() {
        if (!held.empty()) return;
        held_ack = false;
        held_requests_since_ns = 0;
    }
    bool handshaking() const {
        return state == LinkState::Connecting || state == LinkState::AwaitChallenge || state == LinkState::AwaitHello ||
               state == LinkState::AwaitProof;
    }
};

namespace {

enum class Push { Done, Blocked, FirstFault, Broken };

// Appends iovecs for payload bytes [off, off+len) of m; returns false if they did not all fit.
bool append_payload(const TcpOutMessage &m, uint64_t off, uint64_t len, iovec *iov, int *n) {
    uint64_t pos = off - m.base;
    int i = 0;
    while (i < m.iovcnt && pos >= m.iov[i].iov_len) pos -= m.iov[i++].iov_len;
    while (len > 0 && i < m.iovcnt) {
        if (*n == kMaxIov) return false;
        const uint64_t take = std::min<uint64_t>(len, m.iov[i].iov_len - pos);
        iov[(*n)++] = {static_cast<std::byte *>(m.iov[i].iov_base) + pos, take};
        len -= take;
        pos = 0;
        ++i;
    }
    return true;
}

bool payload_readable(const TcpOutMessage &m, uint64_t off, uint64_t len) {
    iovec pieces[kMaxIov];
    while (len > 0) {
        int n = 0;
        append_payload(m, off, len, pieces, &n);
        if (n == 0) return false;
        for (int i = 0; i < n; ++i) {
            if (!guarded_readable(pieces[i].iov_base, pieces[i].iov_len)) return false;
            off += pieces[i].iov_len;
            len -= pieces[i].iov_len;
        }
    }
    return true;
}

uint64_t frame_count(uint64_t total, uint64_t max_payload) {
    return total == 0 ? 1 : (total + max_payload - 1) / max_payload;
}

// Where a message's bytes lie in the stream: its first frame's header is as long as the protocol
// made it, every continuation frame's is the transport's 16 bytes.
struct StreamLayout {
    uint64_t first_header; // wire_header_bytes of the first frame
    uint64_t max_payload;
    uint64_t total;
    uint64_t frames() const { return frame_count(total, max_payload); }
    uint64_t first_frame_bytes() const { return first_header + std::min(max_payload, total); }
    uint64_t bytes() const { return first_header + (frames() - 1) * sizeof(TransportHeader) + total; }
    // The frame that stream position pos falls in, and how far into it.
    void locate(uint64_t pos, uint64_t *frame, uint64_t *in_frame) const {
        if (pos < first_frame_bytes()) {
            *frame = 0;
            *in_frame = pos;
            return;
        }
        const uint64_t rest = pos - first_frame_bytes(), per = sizeof(TransportHeader) + max_payload;
        *frame = 1 + rest / per;
        *in_frame = rest % per;
    }
};

// Bytes that must leave before anything else on a link (held acks), and how far they got.
struct RawBytes {
    std::vector<std::byte> *bytes;
    size_t *off;
    size_t left() const { return bytes->size() - *off; }
    void consumed(size_t n) {
        *off += n;
        if (*off == bytes->size()) {
            bytes->clear();
            *off = 0;
        }
    }
};

Push write_raw(int fd, RawBytes raw) {
    while (raw.left() > 0) {
        const ssize_t w = ::send(fd, raw.bytes->data() + *raw.off, raw.left(), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) return Push::Blocked;
            return Push::Broken;
        }
        raw.consumed(static_cast<size_t>(w));
    }
    return Push::Done;
}

// Writes as much of m as the socket takes, after what is left of raw (in the same sendmsg).
Push write_message_frames(int fd, TcpOutMessage &m, uint64_t max_payload, RawBytes raw) {
    const StreamLayout layout{wire_header_bytes(m.h), max_payload, m.total};
    const uint64_t frames = layout.frames();
    const uint64_t stream_bytes = layout.bytes();
    while (m.stream_pos < stream_bytes) {
        iovec iov[kMaxIov];
        FrameHeader headers[kMaxFramesPerWrite];
        int n = 0, nh = 0;
        size_t bytes = 0;
        const size_t raw_bytes = raw.left();
        if (raw_bytes > 0) {
            iov[n++] = {raw.bytes->data() + *raw.off, raw_bytes};
            bytes += raw_bytes;
        }
        uint64_t f, in_frame;
        layout.locate(m.stream_pos, &f, &in_frame);
        for (; f < frames && nh < kMaxFramesPerWrite && n < kMaxIov - 1 && bytes < kMaxBytesPerWrite;
             ++f, in_frame = 0) {
            const uint64_t off = f * max_payload;
            const uint64_t len = std::min(max_payload, m.total - off);
            if (f >= m.checked) {
                // Decided before any byte of this frame leaves, so that its header can say so.
                if (m.fault_from == UINT64_MAX && !payload_readable(m, off, len)) {
                    if (m.stream_pos == 0) return Push::FirstFault;
                    m.fault_from = f;
                }
                m.checked = f + 1;
            }
            FrameHeader &h = headers[nh++];
            h = frame_header(m.h, m.total, f, static_cast<uint32_t>(len));
            if (f >= m.fault_from) h.t.flags |= kFrameSourceFault;
            // FrameHeader's memory is the wire form's prefix (write_wire_header).
            const uint64_t header_bytes = wire_header_bytes(h);
            if (in_frame < header_bytes) {
                iov[n++] = {reinterpret_cast<std::byte *>(&h) + in_frame, header_bytes - in_frame};
                bytes += header_bytes - in_frame;
            }
            const uint64_t skip = in_frame > header_bytes ? in_frame - header_bytes : 0;
            bool whole = true;
            if (f >= m.fault_from) {
                for (uint64_t z = skip; z < len && whole; z += kZeroBytes) {
                    if (n == kMaxIov) {
                        whole = false;
                        break;
                    }
                    iov[n++] = {const_cast<std::byte *>(g_zeros), std::min<uint64_t>(kZeroBytes, len - z)};
                }
            } else {
                whole = append_payload(m, off + skip, len - skip, iov, &n);
            }
            bytes += len - skip; // an upper bound when !whole; only used to cap the batch
            if (!whole) break;
        }
        msghdr msg{};
        msg.msg_iov = iov;
        msg.msg_iovlen = static_cast<size_t>(n);
        const ssize_t w = ::sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) return Push::Blocked;
            log_debug("tcp: write failed: %s", std::strerror(errno));
            return Push::Broken;
        }
        size_t written = static_cast<size_t>(w);
        if (raw_bytes > 0) {
            const size_t r = std::min(written, raw_bytes);
            raw.consumed(r);
            written -= r;
            if (r < raw_bytes) return Push::Blocked;
        }
        m.stream_pos += static_cast<uint64_t>(written);
        size_t offered = 0;
        for (int i = 0; i < n; ++i) offered += iov[i].iov_len;
        if (static_cast<size_t>(w) < offered) return Push::Blocked; // the socket is full
    }
    return Push::Done;
}

// Keeps the unsent rest of m in memory of its own (the caller may reuse its buffers).
void take_copy(TcpOutMessage &m, uint64_t max_payload) {
    const StreamLayout layout{wire_header_bytes(m.h), max_payload, m.total};
    uint64_t first_frame, in_frame;
    layout.locate(m.stream_pos, &first_frame, &in_frame);
    const uint64_t from = std::min(m.total, first_frame * max_payload);
    std::vector<std::byte> copy(m.total - from);
    for (uint64_t off = from; off < m.total; off += max_payload) {
        const uint64_t len = std::min(max_payload, m.total - off);
        iovec pieces[kMaxIov];
        uint64_t done = 0;
        bool ok = true;
        while (done < len && ok) {
            int n = 0;
            append_payload(m, off + done, len - done, pieces, &n);
            if (n == 0) ok = false;
            for (int i = 0; i < n && ok; ++i) {
                ok = guarded_copy(copy.data() + (off - from) + done, pieces[i].iov_base, pieces[i].iov_len);
                done += pieces[i].iov_len;
            }
        }
        const uint64_t f = off / max_payload;
        if (!ok && f >= m.checked && f < m.fault_from) m.fault_from = f;
    }
    m.owned = std::move(copy);
    m.own_iov.assign(1, iovec{m.owned.data(), m.owned.size()});
    m.iov = m.own_iov.data();
    m.iovcnt = 1;
    m.base = from;
}

} // namespace

TcpTransport::TcpTransport(uint32_t nid, uint32_t pid, const TcpConfig &cfg) : cfg_(cfg) {
    if (cfg_.max_frame_payload < 4096 || cfg_.max_frame_payload > (1u << 24))
        throw std::invalid_argument("tcp: frame payload limit out of range");
    const uint32_t port = port_of(pid, cfg_.port_base);
    if (pid > 65535 || port > 65535 || port == 0)
        throw std::system_error(EINVAL, std::generic_category(),
                                "tcp: pid " + std::to_string(pid) + " has no port (port base " +
                                    std::to_string(cfg_.port_base) + ")");
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (listen_fd_ < 0) throw std::system_error(errno, std::generic_category(), "tcp: socket");
    int one = 1;
    // Lets a new job reuse the port of a finished one whose connections linger in TIME_WAIT.
    setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a = address_of(nid, port);
    if (::bind(listen_fd_, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0 || ::listen(listen_fd_, SOMAXCONN) != 0) {
        const int err = errno;
        ::close(listen_fd_);
        throw std::system_error(err, std::generic_category(), "tcp: listen on port " + std::to_string(port));
    }
    self_ = {nid, pid};
    epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
    wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    timer_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (epoll_fd_ < 0 || wake_fd_ < 0 || timer_fd_ < 0)
        throw std::system_error(errno, std::generic_category(), "tcp: epoll");
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = &g_listen_tag;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev);
    ev.data.ptr = &g_wake_tag;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
    ev.data.ptr = &g_timer_tag;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, timer_fd_, &ev);
}

TcpTransport::~TcpTransport() {
    farewell();
    for (auto &l : owned_) {
        if (l->fd < 0 || l->state == LinkState::Dead) continue;
        // FIN after the last byte we sent; reading what the peer still sent avoids a reset that
        // could make it lose data of ours it has not read yet.
        ::shutdown(l->fd, SHUT_WR);
        char sink[4096];
        while (::recv(l->fd, sink, sizeof sink, MSG_DONTWAIT) > 0) {
        }
    }
    owned_.clear();
    accepting_.clear();
    graveyard_.clear();
    for (int fd : {listen_fd_, epoll_fd_, wake_fd_, timer_fd_})
        if (fd >= 0) ::close(fd);
}

void TcpTransport::add_link(std::unique_ptr<TcpLink> l) {
    // Caller holds links_mutex_.
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP | (l->state == LinkState::Connecting ? EPOLLOUT : 0u);
    ev.data.ptr = l.get();
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, l->fd, &ev);
    handshaking_.fetch_add(1);
    live_links_.fetch_add(1);
    owned_.push_back(std::move(l));
    arm_timer();
}

void TcpTransport::arm_timer() {
    // A tick while handshakes are open: a peer that never finishes is dropped on time, a silent
    // accepted connection within its short deadline, and a connection we retry is opened again.
    itimerspec t{};
    t.it_value.tv_nsec = 100'000'000;
    t.it_interval.tv_nsec = 100'000'000;
    timerfd_settime(timer_fd_, 0, &t, nullptr);
}

int TcpTransport::open_connection(PeerId to, std::string *remote) {
    const uint32_t port = port_of(to.pid, cfg_.port_base);
    if (port > 65535) return -1;
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    tune_socket(fd, cfg_);
    sockaddr_in a = address_of(to.nid, port);
    if (::connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0 && errno != EINPROGRESS) {
        log_debug("tcp: connect to %08x/%u: %s", to.nid, to.pid, std::strerror(errno));
        ::close(fd);
        return -1;
    }
    char text[INET_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET, &a.sin_addr, text, sizeof text);
    *remote = std::string(text) + ":" + std::to_string(port);
    return fd;
}

TcpLink *TcpTransport::connect_to(PeerId to) {
    // Caller holds links_mutex_.
    if (owned_.size() >= cfg_.max_links) {
        log_error("tcp: link table full (%zu links); raise PORTICO_TCP_MAX_LINKS", cfg_.max_links);
        return nullptr;
    }
    std::string remote;
    const int fd = open_connection(to, &remote);
    if (fd < 0) return nullptr;
    auto l = std::make_unique<TcpLink>();
    l->peer = to;
    l->fd = fd;
    l->state = LinkState::Connecting;
    l->remote = remote;
    l->attempts = 1;
    l->deadline_ms = now_ms() + static_cast<uint64_t>(cfg_.connect_timeout_ms);
    TcpLink *raw = l.get();
    send_links_[to.key()] = raw;
    add_link(std::move(l));
    return raw;
}

TcpLink *TcpTransport::link_for(PeerId to) {
    std::lock_guard g(links_mutex_);
    auto it = send_links_.find(to.key());
    if (it != send_links_.end()) return it->second;
    return connect_to(to);
}

void TcpTransport::want_write(TcpLink &l, bool on) {
    // Caller holds l.tx_mutex.
    if (l.writing == on || l.state != LinkState::Up) return;
    l.writing = on;
    writers_.fetch_add(on ? 1 : -1, std::memory_order_relaxed);
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP | (on ? EPOLLOUT : 0u);
    ev.data.ptr = &l;
    epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, l.fd, &ev);
}

bool TcpTransport::hold_frame(TcpLink &l, const FrameHeader &h, const Gather &payload) {
    const size_t at = l.held.size();
    const size_t header_bytes = wire_header_bytes(h);
    l.held.resize(at + header_bytes + payload.length);
    write_frame_header(l.held.data() + at, h, payload.length, 0, static_cast<uint32_t>(payload.length));
    std::byte *dst = l.held.data() + at + header_bytes;
    for (int i = 0; i < payload.iovcnt; ++i) {
        if (!guarded_copy(dst, payload.iov[i].iov_base, payload.iov[i].iov_len)) {
            l.held.resize(at);
            return false;
        }
        dst += payload.iov[i].iov_len;
    }
    return true;
}

void TcpTransport::enlist_held(TcpLink &l, bool ack) {
    {
        std::lock_guard hg(held_mutex_);
        // Once per link: a link whose requests are not due stays listed across flushes, and its
        // held bytes may meanwhile have left with a write and been held anew.
        if (!l.held_listed) {
            l.held_listed = true;
            held_list_.push_back(&l);
            held_links_.store(held_list_.size(), std::memory_order_seq_cst);
        }
    }
    // An ack's sender promised no poll: once the progress thread sleeps nothing may be held.
    if (ack && sleeping_.load(std::memory_order_seq_cst)) flush_held();
}

SendStatus TcpTransport::send(PeerId to, const FrameHeader &h, const Gather &payload, uint64_t token, bool copy_payload,
                              bool defer_wakeup, Hold hold) {
    if (cfg_.secret.empty()) {
        if (!warned_no_secret_.exchange(true))
            log_error("tcp: no job secret, so no TCP peer can be reached (start the job with portico-run, or "
                      "set PORTICO_JOB_SECRET to the same value in every process)");
        return SendStatus::Unreachable;
    }
    TcpLink *l = link_for(to);
    if (!l) return SendStatus::Unreachable;
    TcpOutMessage m;
    m.h = h;
    m.total = payload.length;
    m.iov = payload.iov;
    m.iovcnt = payload.iovcnt;
    m.token = token;
    std::unique_lock g(l->tx_mutex);
    if (l->state == LinkState::Dead || l->broken.load()) return SendStatus::Unreachable;
    const bool idle_link = l->state == LinkState::Up && l->backlog.empty();
    if (hold == Hold::Ack && payload.length == 0 && idle_link) {
        // An ack: it waits for the next write on this link (the application's next put to that
        // peer, in a ping-pong) or the next poll, whichever comes first: one system call less.
        const bool first = l->held.empty();
        hold_frame(*l, h, payload);
        l->held_ack = true;
        g.unlock();
        if (first) enlist_held(*l, true);
        return SendStatus::Sent;
    }
    // Only a request can be held, or start the window of the next one: no clock read for others.
    const bool request = hold == Hold::Burst || hold == Hold::Stream;
    const uint64_t now = request ? monotonic_ns() : 0;
    const uint64_t reads = request && l->reads ? l->reads->load(std::memory_order_acquire) : 0;
    const bool answers = hold == Hold::Burst && reads != l->reads_at_request;
    if (request && idle_link && cfg_.coalesce_ns > 0 && payload.length <= cfg_.max_frame_payload &&
        wire_header_bytes(h) + payload.length <= kCoalesceFrameMax && !l->writing &&
        (defer_wakeup || (now - l->last_request_ns < cfg_.coalesce_ns && !answers))) {
        // The link is streaming (or a bundle is open): this frame waits for the next poll, which
        // writes everything held in one system call. A lone message never waits (the link was
        // quiet, or the peer has spoken since: an answer), and a poll comes soon: the first frame
        // held says Held, and the caller sees to it (the engine wakes a resting progress thread).
        const bool first = l->held.empty();
        if (!hold_frame(*l, h, payload)) return SendStatus::SourceFault;
        if (defer_wakeup) bundle_held_.store(true, std::memory_order_relaxed);
        if (l->held_requests_since_ns == 0) l->held_requests_since_ns = now;
        l->last_request_ns = now;
        l->reads_at_request = reads;
        if (l->held.size() - l->held_off >= kHeldFlushBytes) {
            const Push p = write_raw(l->fd, {&l->held, &l->held_off});
            l->held_written();
            if (p == Push::Blocked) want_write(*l, true);
            if (p == Push::Broken) {
                l->broken = true;
                g.unlock();
                interrupt(); // the poller fails the link; what was held is lost with it
                return SendStatus::Unreachable;
            }
            if (l->held.empty()) return SendStatus::Sent;
        }
        g.unlock();
        if (!first) return SendStatus::Sent;
        enlist_held(*l, false);
        return SendStatus::Held;
    }
    if (request) {
        l->last_request_ns = now;
        l->reads_at_request = reads;
    }
    if (idle_link) {
        const Push p = write_message_frames(l->fd, m, cfg_.max_frame_payload, {&l->held, &l->held_off});
        l->held_written();
        switch (p) {
        case Push::Done: return m.fault_from != UINT64_MAX ? SendStatus::SourceFault : SendStatus::Sent;
        case Push::FirstFault: return SendStatus::SourceFault;
        case Push::Broken: {
            l->broken = true;
            g.unlock();
            interrupt(); // the poller fails the link
            return SendStatus::Unreachable;
        }
        case Push::Blocked: break;
        }
    }
    if (copy_payload) take_copy(m, cfg_.max_frame_payload);
    l->backlog.push_back(std::move(m));
    TcpOutMessage &q = l->backlog.back();
    if (!copy_payload && q.own_iov.empty()) {
        // The gather list itself belongs to the caller; keep our own copy of the descriptors.
        q.own_iov.assign(payload.iov, payload.iov + payload.iovcnt);
        q.iov = q.own_iov.data();
    }
    want_write(*l, true);
    return SendStatus::Queued;
}

int TcpTransport::flush_backlog(TcpLink &l, Receiver &r) {
    std::vector<std::pair<uint64_t, bool>> done;
    bool broken = false;
    {
        std::lock_guard g(l.tx_mutex);
        if (l.state != LinkState::Up) return 0;
        if (l.backlog.empty() && !l.held.empty() && write_raw(l.fd, {&l.held, &l.held_off}) == Push::Broken)
            l.broken = broken = true;
        l.held_written();
        while (!l.backlog.empty() && !broken) {
            TcpOutMessage &m = l.backlog.front();
            const Push p = write_message_frames(l.fd, m, cfg_.max_frame_payload, {&l.held, &l.held_off});
            l.held_written();
            if (p == Push::Blocked) break;
            if (p == Push::Broken) {
                l.broken = broken = true;
                break;
            }
            done.emplace_back(m.token, p == Push::FirstFault || m.fault_from != UINT64_MAX);
            l.backlog.pop_front();
        }
        want_write(l, (!l.backlog.empty() || !l.held.empty()) && !broken);
    }
    for (auto &[token, fault] : done) r.on_send_complete(token, true, fault);
    if (broken) fail_link(l, r, false);
    return static_cast<int>(done.size());
}

// ---- accepted connections, until they authenticate --------------------------------------------
//
// Anyone who reaches the port can connect, so what a connection that has not authenticated may
// hold is bounded: a slot of max_pending_accepts (at most max_pending_per_address of them from an
// address that no peer of the job has), its descriptor and one TcpLink (about 1 KiB), for its
// short deadline. When the slots are full the oldest silent connection (no whole hello yet) goes,
// from the address that holds the most of them, strangers' addresses before those of the job's
// peers; a connection whose hello names a peer of the job is never dropped for a stranger's. Each
// one dropped gets one last read first (its hello may be there), and then a Refusal saying why,
// so that a real peer connects again instead of failing (advance_handshake). Refusals are counted
// and logged at powers of two.

void TcpTransport::end_batch() { graveyard_.clear(); }

void TcpTransport::refused(const std::string &what) {
    const uint64_t n = refused_.fetch_add(1) + 1;
    if ((n & (n - 1)) == 0)
        log_error("tcp: refused %s (%llu refused so far)", what.c_str(), static_cast<unsigned long long>(n));
}

void TcpTransport::accept_some(Receiver &r) {
    // A bounded number per turn: a flood reopening every connection we close would otherwise keep
    // this loop going, and the job's own handshakes (ready in the same batch) would starve. The
    // listening socket is reported ready again on the next turn.
    for (int turn = 0; turn < kAcceptsPerTurn; ++turn) {
        sockaddr_in from{};
        socklen_t len = sizeof from;
        const int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr *>(&from), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            admit(fd, ntohl(from.sin_addr.s_addr), ntohs(from.sin_port), r);
            continue;
        }
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
            // Out of descriptors: a waiting connection makes room, or the listening socket rests
            // until the next tick (it would be reported ready again and again meanwhile).
            if (evict_one(r, 0)) continue;
            pause_listening();
        }
        return;
    }
}

void TcpTransport::pause_listening() {
    if (listen_paused_) return;
    listen_paused_ = true;
    epoll_event ev{};
    ev.data.u64 = reinterpret_cast<uintptr_t>(&g_listen_tag);
    epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, listen_fd_, &ev);
    log_error("tcp: out of file descriptors; not accepting connections for a moment");
    arm_timer();
}

void TcpTransport::resume_listening() {
    if (!listen_paused_) return;
    listen_paused_ = false;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = reinterpret_cast<uintptr_t>(&g_listen_tag);
    epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, listen_fd_, &ev);
}

size_t TcpTransport::silent_from(uint32_t addr) const {
    size_t n = 0;
    for (const auto &[id, l] : accepting_)
        if (l->from_addr == addr && l->state == LinkState::AwaitHello) ++n;
    return n;
}

void TcpTransport::admit(int fd, uint32_t from_addr, uint16_t from_port, Receiver &r) {
    bool known;
    {
        std::lock_guard g(links_mutex_);
        known = known_addrs_.count(from_addr) != 0;
    }
    // A stranger's address holds at most its share of the slots; then every address shares them.
    if (!known)
        while (silent_from(from_addr) >= cfg_.max_pending_per_address && evict_one(r, from_addr)) {
        }
    while (accepting_.size() >= cfg_.max_pending_accepts && evict_one(r, 0)) {
    }
    const std::string remote = ipv4_text(from_addr) + ":" + std::to_string(from_port);
    if (accepting_.size() >= cfg_.max_pending_accepts) { // every one waiting is a peer of the job, proving itself
        refused("a connection from " + remote + ": too many connections waiting to authenticate");
        ::close(fd);
        return;
    }
    tune_socket(fd, cfg_);
    auto l = std::make_unique<TcpLink>();
    TcpLink &ref = *l;
    l->fd = fd;
    l->accepted = true;
    l->from_addr = from_addr;
    l->remote = remote;
    l->state = LinkState::AwaitHello;
    // While the slots are half full (a flood), silence is given less time.
    const bool pressed = 2 * accepting_.size() >= cfg_.max_pending_accepts;
    l->deadline_ms = now_ms() + static_cast<uint64_t>(pressed ? cfg_.hello_timeout_pressed_ms : cfg_.hello_timeout_ms);
    l->accept_id = next_accept_id_++;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.u64 = l->accept_id << 1 | 1; // odd: an accept id (pointers are even)
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
    handshaking_.fetch_add(1);
    live_links_.fetch_add(1);
    accepting_.emplace(l->accept_id, std::move(l));
    arm_timer();
    advance_accepted(ref, r); // its hello may be here already
}

TcpLink *TcpTransport::pick_victim(uint32_t only_from) {
    TcpLink *oldest = nullptr; // silent, from only_from (or from anywhere)
    for (const auto &[id, l] : accepting_)
        if (l->state == LinkState::AwaitHello && (only_from == 0 || l->from_addr == only_from) &&
            (!oldest || l->accept_id < oldest->accept_id))
            oldest = l.get();
    if (only_from != 0) return oldest;
    // Silent ones at strangers' addresses first: the oldest of the address holding the most.
    std::unordered_set<uint32_t> known;
    {
        std::lock_guard g(links_mutex_);
        known = known_addrs_;
    }
    std::unordered_map<uint32_t, std::pair<size_t, TcpLink *>> by_addr; // count, oldest
    for (const auto &[id, l] : accepting_) {
        if (l->state != LinkState::AwaitHello || known.count(l->from_addr)) continue;
        auto &[count, first] = by_addr[l->from_addr];
        ++count;
        if (!first || l->accept_id < first->accept_id) first = l.get();
    }
    TcpLink *victim = nullptr;
    size_t most = 0;
    for (const auto &[addr, e] : by_addr)
        if (e.first > most || (e.first == most && e.second->accept_id < victim->accept_id)) {
            most = e.first;
            victim = e.second;
        }
    if (victim) return victim;
    if (oldest) return oldest;
    // Then one that said hello for a stranger's id; never one of the job's peers proving itself.
    for (const auto &[id, l] : accepting_)
        if (l->state == LinkState::AwaitProof && !l->known_peer && (!victim || l->accept_id < victim->accept_id))
            victim = l.get();
    return victim;
}

bool TcpTransport::evict_one(Receiver &r, uint32_t only_from) {
    // A few tries: the last read may find a hello (then it is not silent any more) or an end.
    for (int tries = 0; tries < 8; ++tries) {
        TcpLink *victim = pick_victim(only_from);
        if (!victim) return false;
        const uint64_t id = victim->accept_id;
        const LinkState before = victim->state;
        advance_accepted(*victim, r);
        if (!accepting_.count(id)) return true; // it ended by itself: a slot is free
        if (victim->state != before) continue;  // its hello was there
        const HandshakeMessage tell = make_refusal(self_, victim->peer, RefusalReason::Busy);
        drop_accepting(*victim, &tell,
                       "a connection from " + victim->remote + ": too many connections waiting to authenticate");
        return true;
    }
    return false;
}

void TcpTransport::drop_accepting(TcpLink &l, const HandshakeMessage *tell, const std::string &what) {
    if (tell) {
        [[maybe_unused]] ssize_t n = ::send(l.fd, tell, sizeof *tell, MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    refused(what);
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, l.fd, nullptr);
    {
        std::lock_guard g(l.tx_mutex);
        l.state = LinkState::Dead;
        ::close(l.fd);
        l.fd = -1;
    }
    l.reported = true;
    handshaking_.fetch_sub(1);
    live_links_.fetch_sub(1);
    auto it = accepting_.find(l.accept_id);
    graveyard_.push_back(std::move(it->second)); // events of this batch may still name it
    accepting_.erase(it);
}

TcpTransport::HandshakeRead TcpTransport::read_handshake(TcpLink &l) {
    // Reads exactly one handshake message, so that frames behind it stay in the socket.
    auto *dst = reinterpret_cast<std::byte *>(&l.incoming);
    while (l.incoming_got < sizeof l.incoming) {
        const ssize_t n = ::recv(l.fd, dst + l.incoming_got, sizeof l.incoming - l.incoming_got, MSG_DONTWAIT);
        if (n > 0) {
            l.incoming_got += static_cast<size_t>(n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return HandshakeRead::More;
        return HandshakeRead::Closed;
    }
    l.incoming_got = 0;
    return HandshakeRead::Done;
}

namespace {
bool write_handshake(int fd, const HandshakeMessage &m) {
    // A fresh connection's send buffer always has room for 72 bytes; anything less is a failure.
    return ::send(fd, &m, sizeof m, MSG_NOSIGNAL | MSG_DONTWAIT) == static_cast<ssize_t>(sizeof m);
}
} // namespace

void TcpTransport::advance_accepted(TcpLink &l, Receiver &r) {
    const char *why = nullptr;
    const std::string who = "a connection from " + l.remote;
    switch (read_handshake(l)) {
    case HandshakeRead::More: return;
    case HandshakeRead::Closed:
        return drop_accepting(l, nullptr,
                              who + (l.state == LinkState::AwaitHello ? " that closed before its hello"
                                                                      : " that closed during its handshake"));
    case HandshakeRead::Done: break;
    }
    if (l.state == LinkState::AwaitHello) {
        if (!handshake_valid(l.incoming, HandshakeStep::Hello, &why))
            return drop_accepting(l, nullptr, who + ": " + why);
        l.peer = {l.incoming.from_nid, l.incoming.from_pid};
        if (PeerId{l.incoming.to_nid, l.incoming.to_pid} != self_) {
            const HandshakeMessage tell = make_refusal(self_, l.peer, RefusalReason::NotAddressedHere);
            return drop_accepting(l, &tell, who + ": addressed to another endpoint");
        }
        if (cfg_.secret.empty()) {
            const HandshakeMessage tell = make_refusal(self_, l.peer, RefusalReason::NoSecret);
            return drop_accepting(l, &tell, who + ": this process has no job secret");
        }
        {
            std::lock_guard g(links_mutex_);
            l.known_peer = known_ids_.count(l.peer.key()) != 0;
        }
        l.hello = l.incoming;
        uint8_t nonce[16];
        random_nonce(nonce);
        l.challenge = make_challenge(cfg_.secret, self_, l.hello, nonce);
        if (!write_handshake(l.fd, l.challenge)) return drop_accepting(l, nullptr, who + ": its connection broke");
        l.state = LinkState::AwaitProof;
        l.deadline_ms = now_ms() + static_cast<uint64_t>(cfg_.proof_timeout_ms);
        return;
    }
    // AwaitProof
    if (l.incoming.step == HandshakeStep::Refusal && handshake_valid(l.incoming, HandshakeStep::Refusal, &why))
        return drop_accepting(l, nullptr,
                              who + ": it refused our challenge: " + refusal_text(refusal_reason(l.incoming)));
    if (!handshake_valid(l.incoming, HandshakeStep::Proof, &why)) return drop_accepting(l, nullptr, who + ": " + why);
    if (PeerId{l.incoming.from_nid, l.incoming.from_pid} != l.peer)
        return drop_accepting(l, nullptr, who + ": the proof comes from another endpoint");
    if (!proof_authentic(cfg_.secret, l.hello, l.challenge, l.incoming)) {
        const HandshakeMessage tell = make_refusal(self_, l.peer, RefusalReason::OtherSecret);
        return drop_accepting(l, &tell, who + ": the peer does not know the job secret");
    }
    // Authenticated: the link joins the others for good.
    const uint64_t id = l.accept_id;
    {
        std::lock_guard g(links_mutex_);
        if (owned_.size() < cfg_.max_links) {
            // Replies to the peer go over its connection unless we opened one of our own first.
            send_links_.try_emplace(l.peer.key(), &l);
            owned_.push_back(std::move(accepting_.at(id)));
        }
    }
    if (accepting_.at(id)) {
        log_error("tcp: link table full (%zu links); raise PORTICO_TCP_MAX_LINKS", cfg_.max_links);
        const HandshakeMessage tell = make_refusal(self_, l.peer, RefusalReason::LinkTableFull);
        return drop_accepting(l, &tell, who + ": the link table is full");
    }
    accepting_.erase(id);
    l.accept_id = 0;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.ptr = &l;
    epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, l.fd, &ev);
    become_up(l, r);
}

void TcpTransport::retry_connect(TcpLink &l, Receiver &r, const std::string &why) {
    // A connection we opened ended before it was up, not because the peer refused us for good: a
    // busy acceptor (a flood) or a slow one. Connect again until the deadline.
    l.last_failure = why;
    const uint64_t now = now_ms();
    if (now >= l.deadline_ms) {
        log_error("tcp: no connection to %08x/%u at %s within %d ms (%u attempts; the last one ended: %s)", l.peer.nid,
                  l.peer.pid, l.remote.c_str(), cfg_.connect_timeout_ms, l.attempts, why.c_str());
        return fail_link(l, r, false);
    }
    log_debug("tcp: the connection to %s ended before it was up (%s); connecting again", l.remote.c_str(), why.c_str());
    if (l.fd >= 0) epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, l.fd, nullptr);
    {
        std::lock_guard g(l.tx_mutex);
        if (l.fd >= 0) ::close(l.fd);
        l.fd = -1;
        l.state = LinkState::Connecting;
    }
    l.incoming_got = 0;
    // At once the first time; then a little later each time (the tick opens it), up to 100 ms.
    l.retry_at_ms = now + (l.attempts < 2 ? 0 : std::min<uint64_t>(100, uint64_t{5} << std::min(l.attempts, 8u)));
    if (l.retry_at_ms <= now) reconnect(l, r);
}

void TcpTransport::reconnect(TcpLink &l, Receiver &r) {
    ++l.attempts;
    std::string remote;
    const int fd = open_connection(l.peer, &remote);
    if (fd < 0) {
        if (errno == ECONNREFUSED) return fail_link(l, r, false); // nobody listens there any more
        l.retry_at_ms = now_ms() + 100;
        return;
    }
    {
        std::lock_guard g(l.tx_mutex);
        l.fd = fd;
    }
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP | EPOLLOUT;
    ev.data.ptr = &l;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
}

void TcpTransport::advance_handshake(TcpLink &l, Receiver &r) {
    // A connection we opened (accepted ones: advance_accepted).
    const char *why = nullptr;
    auto refuse = [&](const char *reason) {
        log_error("tcp: outgoing connection to %s (%08x/%u) refused: %s", l.remote.c_str(), l.peer.nid, l.peer.pid,
                  reason);
        fail_link(l, r, true);
    };
    if (l.fd < 0) return; // waiting to connect again (an event about the connection before)
    if (l.state == LinkState::Connecting) {
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(l.fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err == ECONNREFUSED) { // nobody listens: the peer is gone
            log_debug("tcp: connect to %08x/%u: %s", l.peer.nid, l.peer.pid, std::strerror(err));
            return fail_link(l, r, false);
        }
        if (err != 0) return retry_connect(l, r, std::string("connect: ") + std::strerror(err));
        sockaddr_in peer{};
        socklen_t peer_len = sizeof peer;
        if (getpeername(l.fd, reinterpret_cast<sockaddr *>(&peer), &peer_len) != 0) return; // not yet connected
        uint8_t nonce[16];
        random_nonce(nonce);
        l.hello = make_hello(self_, l.peer, nonce);
        if (!write_handshake(l.fd, l.hello)) return retry_connect(l, r, "our hello could not be written");
        {
            std::lock_guard g(l.tx_mutex);
            l.state = LinkState::AwaitChallenge;
        }
        epoll_event ev{};
        ev.events = EPOLLIN | EPOLLRDHUP;
        ev.data.ptr = &l;
        epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, l.fd, &ev);
        return;
    }
    switch (read_handshake(l)) {
    case HandshakeRead::More: return;
    case HandshakeRead::Closed:
        // Closed without a word: not a refusal of ours for good (that comes with a Refusal).
        return retry_connect(l, r, "the peer closed the connection before answering");
    case HandshakeRead::Done: break;
    }
    if (l.state != LinkState::AwaitChallenge) return;
    if (l.incoming.step == HandshakeStep::Refusal && handshake_valid(l.incoming, HandshakeStep::Refusal, &why)) {
        const RefusalReason reason = refusal_reason(l.incoming);
        if (refusal_is_transient(reason)) return retry_connect(l, r, refusal_text(reason));
        return refuse(refusal_text(reason));
    }
    if (!handshake_valid(l.incoming, HandshakeStep::Challenge, &why)) return refuse(why);
    if (PeerId{l.incoming.from_nid, l.incoming.from_pid} != l.peer ||
        PeerId{l.incoming.to_nid, l.incoming.to_pid} != self_)
        return refuse("the endpoint that answered is not the one called");
    if (!challenge_authentic(cfg_.secret, l.hello, l.incoming)) {
        const HandshakeMessage tell = make_refusal(self_, l.peer, RefusalReason::OtherSecret);
        write_handshake(l.fd, tell); // so that its log says why we close
        return refuse("the peer does not know the job secret");
    }
    l.challenge = l.incoming;
    if (!write_handshake(l.fd, make_proof(cfg_.secret, self_, l.hello, l.challenge)))
        return retry_connect(l, r, "our proof could not be written");
    return become_up(l, r);
}

void TcpTransport::become_up(TcpLink &l, Receiver &r) {
    l.decoder = std::make_unique<FrameDecoder>(cfg_.max_frame_payload);
    l.ever_up = true;
    std::shared_ptr<std::atomic<uint64_t>> reads;
    {
        std::lock_guard g(links_mutex_);
        auto &shared = peer_reads_[l.peer.key()];
        if (!shared) shared = std::make_shared<std::atomic<uint64_t>>(0);
        reads = shared;
    }
    {
        std::lock_guard g(l.tx_mutex);
        l.reads = std::move(reads);
        l.state = LinkState::Up;
    }
    handshaking_.fetch_sub(1);
    up_links_.push_back(&l);
    log_debug("tcp: link with %08x/%u up", l.peer.nid, l.peer.pid);
    flush_backlog(l, r);
    if (!l.reported) on_readable(l, r); // frames may have followed the handshake
}

int TcpTransport::on_readable(TcpLink &l, Receiver &r) {
    FrameDecoder &d = *l.decoder;
    int frames = 0;
    for (int round = 0; round < 8; ++round) {
        std::byte *dst = d.space(); // first: it may make room
        const size_t room = d.space_size();
        const ssize_t n = ::recv(l.fd, dst, room, MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) return frames;
            log_debug("tcp: read from %08x/%u: %s", l.peer.nid, l.peer.pid, std::strerror(errno));
            fail_link(l, r, false);
            return frames + 1;
        }
        if (n == 0) { // the peer closed: everything it sent was delivered
            fail_link(l, r, false);
            return frames + 1;
        }
        d.produced(static_cast<size_t>(n));
        // Before the frames are handed on: an answer to them must find the link spoken to.
        l.reads->fetch_add(1, std::memory_order_release);
        FrameHeader h;
        const std::byte *payload = nullptr;
        const char *why = nullptr;
        FrameRun run(r); // the frames of this recv
        for (;;) {
            const auto res = d.next(&h, &payload, &why);
            if (res == FrameDecoder::Result::NeedMore) break;
            if (res == FrameDecoder::Result::Malformed) {
                run.end();
                malformed_.fetch_add(1);
                log_error("tcp: malformed frame from %08x/%u (%s); closing the connection", l.peer.nid, l.peer.pid,
                          why);
                fail_link(l, r, false);
                return frames + 1;
            }
            if (h.t.flags & kFrameGoodbye)
                l.said_goodbye = true; // the close that follows is on purpose
            else
                run.frame(l, h, payload);
            d.consume();
            ++frames;
        }
        if (static_cast<size_t>(n) < room) return frames; // the socket is drained
    }
    return frames;
}

void TcpTransport::fail_link(TcpLink &l, Receiver &r, bool refused) {
    // Caller holds the poll lock.
    if (l.reported.exchange(true)) return;
    std::erase(up_links_, &l);
    const bool was_handshaking = l.handshaking();
    std::deque<TcpOutMessage> abandoned;
    {
        std::lock_guard g(l.tx_mutex);
        l.state = LinkState::Dead;
        abandoned.swap(l.backlog);
        if (l.fd >= 0) {
            epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, l.fd, nullptr);
            ::close(l.fd);
        }
        l.fd = -1;
    }
    bool was_send_link = false;
    bool last = true;
    {
        std::lock_guard g(links_mutex_);
        auto it = send_links_.find(l.peer.key());
        if (it != send_links_.end() && it->second == &l) {
            send_links_.erase(it);
            was_send_link = true;
        }
        // Another authenticated connection with the peer may still bring its answers (each side
        // answers on the connection it opened, and a peer that exits closes them all). One still
        // in its handshake does not count: it may lead to a new process that took the peer's id.
        for (const auto &o : owned_)
            if (o.get() != &l && o->peer == l.peer && o->ever_up && !o->reported) last = false;
    }
    if (was_handshaking) handshaking_.fetch_sub(1);
    live_links_.fetch_sub(1);
    if (refused) refused_.fetch_add(1);
    for (TcpOutMessage &m : abandoned) r.on_send_complete(m.token, false, m.fault_from != UINT64_MAX);
    // A connection that never authenticated speaks for nobody: its claimed id must not fail the
    // operations of a real peer.
    if (l.ever_up || was_send_link) r.on_link_failed(l, last);
}

void TcpTransport::expire_handshakes(Receiver &r) {
    const uint64_t now = now_ms();
    // Connections we opened: given up at their deadline, or opened again when a retry is due.
    std::vector<TcpLink *> late, due;
    {
        std::lock_guard g(links_mutex_);
        for (auto &l : owned_) {
            if (l->reported || !l->handshaking()) continue;
            if (now >= l->deadline_ms)
                late.push_back(l.get());
            else if (l->fd < 0 && now >= l->retry_at_ms)
                due.push_back(l.get());
        }
    }
    for (TcpLink *l : late) {
        log_error("tcp: the connection to %08x/%u at %s did not come up in %d ms (%u attempts, the last one %s%s%s); "
                  "giving up",
                  l->peer.nid, l->peer.pid, l->remote.c_str(), cfg_.connect_timeout_ms, l->attempts,
                  l->state == LinkState::Connecting ? "still connecting" : "waiting for the peer's challenge",
                  l->last_failure.empty() ? "" : "; the last one before this ended: ", l->last_failure.c_str());
        fail_link(*l, r, false);
    }
    for (TcpLink *l : due) reconnect(*l, r);
    // Accepted ones past their deadline, each after a last read (its hello or proof may be here).
    std::vector<uint64_t> overdue;
    for (const auto &[id, l] : accepting_)
        if (now >= l->deadline_ms) overdue.push_back(id);
    for (uint64_t id : overdue) {
        auto it = accepting_.find(id);
        if (it == accepting_.end()) continue;
        TcpLink &l = *it->second;
        advance_accepted(l, r);
        if (!accepting_.count(id) || now < l.deadline_ms) continue;
        const HandshakeMessage tell = make_refusal(self_, l.peer, RefusalReason::Late);
        drop_accepting(l, &tell,
                       "a connection from " + l.remote +
                           (l.state == LinkState::AwaitHello ? " that sent no hello in time"
                                                             : " that did not finish its handshake in time"));
    }
    resume_listening();
}

void TcpTransport::service(uint64_t data, uint32_t events, Receiver &r) {
    // Caller holds poll_mutex_.
    if (data & 1) { // an accepted connection still authenticating; it may have gone meanwhile
        auto it = accepting_.find(data >> 1);
        if (it != accepting_.end()) advance_accepted(*it->second, r);
        return;
    }
    void *tag = reinterpret_cast<void *>(static_cast<uintptr_t>(data));
    if (tag == &g_listen_tag) {
        accept_some(r);
        return;
    }
    if (tag == &g_wake_tag) {
        uint64_t v;
        [[maybe_unused]] ssize_t n = ::read(wake_fd_, &v, sizeof v);
        // A sender may have found its link broken.
        std::vector<TcpLink *> broken;
        {
            std::lock_guard g(links_mutex_);
            for (auto &l : owned_)
                if (!l->reported && l->broken) broken.push_back(l.get());
        }
        for (TcpLink *l : broken) fail_link(*l, r, false);
        return;
    }
    if (tag == &g_timer_tag) {
        uint64_t v;
        [[maybe_unused]] ssize_t n = ::read(timer_fd_, &v, sizeof v);
        expire_handshakes(r);
        if (handshaking_.load() == 0) {
            itimerspec off{};
            timerfd_settime(timer_fd_, 0, &off, nullptr);
        }
        return;
    }
    auto &l = *static_cast<TcpLink *>(tag);
    if (l.reported) return;
    if (l.state == LinkState::Up) {
        if (events & EPOLLOUT) flush_backlog(l, r);
        if (!l.reported && (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))) on_readable(l, r);
    } else {
        advance_handshake(l, r);
    }
}

int TcpTransport::service_ready(Receiver &r, int timeout_ms) {
    epoll_event evs[64];
    const int k = epoll_wait(epoll_fd_, evs, 64, timeout_ms);
    for (int i = 0; i < k; ++i) service(evs[i].data.u64, evs[i].events, r);
    end_batch();
    return k > 0 ? k : 0;
}

void TcpTransport::flush_held(bool due_only) {
    // Under held_mutex_ throughout (then each link's tx_mutex; send() never holds both): the list
    // keeps its capacity, so holding an ack allocates nothing.
    std::lock_guard hg(held_mutex_);
    const uint64_t now = due_only ? monotonic_ns() : 0;
    bool broken = false;
    size_t kept = 0; // links whose requests are not due yet stay listed, in place
    for (TcpLink *l : held_list_) {
        std::lock_guard g(l->tx_mutex);
        l->held_listed = false;
        // With a backlog the held bytes go first when it is pushed (EPOLLOUT is already asked for).
        if (l->state != LinkState::Up || l->held.empty() || !l->backlog.empty()) continue;
        if (due_only && !l->held_ack && now - l->held_requests_since_ns < cfg_.coalesce_ns) {
            l->held_listed = true;
            held_list_[kept++] = l;
            continue;
        }
        const Push p = write_raw(l->fd, {&l->held, &l->held_off});
        l->held_written();
        if (p == Push::Blocked) want_write(*l, true);
        if (p == Push::Broken) l->broken = broken = true;
    }
    held_list_.resize(kept);
    held_links_.store(kept, std::memory_order_seq_cst);
    if (broken) interrupt(); // the poller fails the link
}

void TcpTransport::arm_sleep() {
    sleeping_.store(true, std::memory_order_seq_cst);
    if (held_links_.load(std::memory_order_seq_cst) > 0) flush_held();
}

void TcpTransport::disarm_sleep() { sleeping_.store(false, std::memory_order_relaxed); }

void TcpTransport::flush_wakeups() {
    // Only a bundle's frames must leave here (PtlEndBundle, or a thread about to wait, which
    // calls this on every wait): a held ack keeps waiting for the application's next put, which
    // in a ping-pong comes right after the wait, or for the next poll.
    // Read before it is cleared: every wait of every thread comes here, and most find nothing.
    if (bundle_held_.load(std::memory_order_relaxed) && bundle_held_.exchange(false, std::memory_order_relaxed) &&
        held_links_.load(std::memory_order_relaxed) > 0)
        flush_held();
}

int TcpTransport::poll_links(Receiver &r, bool background) {
    // With no connection at all only the listening socket matters; look at it now and then (and
    // without the lock: this is every turn of every waiting thread on a machine without TCP peers).
    if (live_links_.load(std::memory_order_relaxed) == 0) {
        // A racy count is fine: it only spaces out the looks at the listening socket (system
        // calls that a frame arriving on another transport would wait for; see ShmTransport::poll).
        const unsigned k = idle_polls_.load(std::memory_order_relaxed) + 1;
        idle_polls_.store(k, std::memory_order_relaxed);
        if ((k & 1023) != 0) return 0;
    }
    if (held_links_.load(std::memory_order_relaxed) > 0) flush_held(background);
    std::unique_lock lock(poll_mutex_, std::try_to_lock);
    if (!lock.owns_lock()) return 0;
    // With a few connections, all up and none waiting to write, read them directly: one system
    // call per connection and turn (as a raw socket ping-pong does) instead of epoll_wait and
    // then recv. Every 64th turn still asks epoll (new connections, handshakes, hang-ups, timers).
    const size_t n = up_links_.size();
    if (n > 0 && n <= kDirectReadLinks && handshaking_.load(std::memory_order_relaxed) == 0 &&
        writers_.load(std::memory_order_relaxed) == 0 && (++direct_turns_ & 63) != 0) {
        TcpLink *links[kDirectReadLinks];
        std::copy(up_links_.begin(), up_links_.end(), links); // on_readable may fail a link
        int work = 0;
        for (size_t i = 0; i < n; ++i)
            if (!links[i]->reported) work += on_readable(*links[i], r);
        return work;
    }
    return service_ready(r, 0);
}

void TcpTransport::wait(Receiver &r, int timeout_ms) {
    epoll_event evs[64];
    const int k = epoll_wait(epoll_fd_, evs, 64, timeout_ms);
    if (k <= 0) return;
    // The sleeper is awake, and polls before it sleeps again (arm_sleep): the acks of the frames
    // it serves now may be held for that poll instead of each leaving at once (enlist_held).
    sleeping_.store(false, std::memory_order_relaxed);
    std::lock_guard lock(poll_mutex_);
    for (int i = 0; i < k; ++i) service(evs[i].data.u64, evs[i].events, r);
    end_batch();
}

void TcpTransport::know_peers(const PeerId *peers, size_t n) {
    std::lock_guard g(links_mutex_);
    for (size_t i = 0; i < n; ++i) {
        known_ids_.insert(peers[i].key());
        known_addrs_.insert(peers[i].nid);
    }
}

void TcpTransport::interrupt() {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t w = ::write(wake_fd_, &one, sizeof one);
}

void TcpTransport::farewell() {
    FrameHeader bye{};
    bye.t.version = kFrameVersion;
    bye.t.flags = kFrameGoodbye;
    const auto *b = reinterpret_cast<const std::byte *>(&bye);
    // A lock that does not come free is held by a thread that will not run again (the exit runs
    // from a signal handler's exit, which interrupted it): no goodbye then, the peer sees an
    // unexplained close, as behind a backlog.
    constexpr std::chrono::milliseconds kPatience{100};
    if (!lock_within(links_mutex_, kPatience)) return;
    std::lock_guard g(links_mutex_, std::adopt_lock);
    for (auto &l : owned_) {
        if (!lock_within(l->tx_mutex, kPatience)) continue;
        std::lock_guard t(l->tx_mutex, std::adopt_lock);
        // Behind a backlog the goodbye could not go now; the peer then sees an unexplained close.
        if (l->state != LinkState::Up || l->broken.load() || !l->backlog.empty()) continue;
        l->held.insert(l->held.end(), b, b + wire_header_bytes(bye)); // after any held acks
        if (write_raw(l->fd, {&l->held, &l->held_off}) == Push::Broken) l->broken = true;
    }
}

void TcpTransport::flush(Receiver &r, int timeout_ms) {
    const uint64_t deadline = now_ms() + static_cast<uint64_t>(timeout_ms);
    for (;;) {
        flush_held();
        bool queued = false;
        {
            std::lock_guard g(links_mutex_);
            for (auto &l : owned_) {
                std::lock_guard t(l->tx_mutex);
                if (l->state != LinkState::Dead && (!l->backlog.empty() || !l->held.empty())) queued = true;
            }
        }
        if (!queued || now_ms() >= deadline) return;
        std::lock_guard lock(poll_mutex_);
        service_ready(r, 10);
    }
}

} // namespace portico::transport::tcp
