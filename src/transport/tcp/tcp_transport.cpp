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
char g_listen_tag, g_wake_tag, g_timer_tag;

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
    uint64_t last_request_ns = 0;  // when the last Hold::Burst frame was sent (under tx_mutex)
    uint64_t reads_at_request = 0; // *reads then (under tx_mutex)
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
    HandshakeMessage hello{}, challenge{}, incoming{};
    size_t incoming_got = 0;
    std::unique_ptr<FrameDecoder> decoder;
    std::atomic<bool> reported{false};

    ~TcpLink() override {
        if (fd >= 0) ::close(fd);
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
    // A coarse tick while handshakes are open: a peer that never finishes is dropped on time.
    itimerspec t{};
    t.it_value.tv_sec = 1;
    t.it_interval.tv_sec = 1;
    timerfd_settime(timer_fd_, 0, &t, nullptr);
}

TcpLink *TcpTransport::connect_to(PeerId to) {
    // Caller holds links_mutex_.
    if (owned_.size() >= cfg_.max_links) {
        log_error("tcp: link table full (%zu links); raise PORTICO_TCP_MAX_LINKS", cfg_.max_links);
        return nullptr;
    }
    const uint32_t port = port_of(to.pid, cfg_.port_base);
    if (port > 65535) return nullptr;
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return nullptr;
    tune_socket(fd, cfg_);
    sockaddr_in a = address_of(to.nid, port);
    if (::connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0 && errno != EINPROGRESS) {
        log_debug("tcp: connect to %08x/%u: %s", to.nid, to.pid, std::strerror(errno));
        ::close(fd);
        return nullptr;
    }
    auto l = std::make_unique<TcpLink>();
    l->peer = to;
    l->fd = fd;
    l->state = LinkState::Connecting;
    char text[INET_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET, &a.sin_addr, text, sizeof text);
    l->remote = std::string(text) + ":" + std::to_string(port);
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
    const FrameHeader fh = frame_header(h, payload.length, 0, static_cast<uint32_t>(payload.length));
    const size_t header_bytes = wire_header_bytes(fh);
    l.held.resize(at + header_bytes + payload.length);
    write_wire_header(l.held.data() + at, fh);
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
        held_list_.push_back(&l);
        held_links_.store(held_list_.size(), std::memory_order_seq_cst);
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
        l->last_request_ns = now;
        l->reads_at_request = reads;
        if (l->held.size() - l->held_off >= kHeldFlushBytes) {
            const Push p = write_raw(l->fd, {&l->held, &l->held_off});
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
        switch (write_message_frames(l->fd, m, cfg_.max_frame_payload, {&l->held, &l->held_off})) {
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
        while (!l.backlog.empty() && !broken) {
            TcpOutMessage &m = l.backlog.front();
            const Push p = write_message_frames(l.fd, m, cfg_.max_frame_payload, {&l.held, &l.held_off});
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

void TcpTransport::accept_all() {
    for (;;) {
        sockaddr_in from{};
        socklen_t len = sizeof from;
        int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr *>(&from), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) return;
        std::lock_guard g(links_mutex_);
        if (pending_accepts_ >= cfg_.max_pending_accepts || owned_.size() >= cfg_.max_links) {
            refused_.fetch_add(1);
            log_error("tcp: refused a connection from %s: too many connections waiting to authenticate",
                      inet_ntoa(from.sin_addr));
            ::close(fd);
            continue;
        }
        tune_socket(fd, cfg_);
        auto l = std::make_unique<TcpLink>();
        l->fd = fd;
        l->accepted = true;
        char text[INET_ADDRSTRLEN] = "?";
        inet_ntop(AF_INET, &from.sin_addr, text, sizeof text);
        l->remote = std::string(text) + ":" + std::to_string(ntohs(from.sin_port));
        l->state = LinkState::AwaitHello;
        l->deadline_ms = now_ms() + static_cast<uint64_t>(cfg_.connect_timeout_ms);
        ++pending_accepts_;
        add_link(std::move(l));
    }
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

void TcpTransport::advance_handshake(TcpLink &l, Receiver &r) {
    const char *why = nullptr;
    auto refuse = [&](const char *reason) {
        log_error("tcp: %s connection %s %s (%08x/%u) refused: %s", l.accepted ? "incoming" : "outgoing",
                  l.accepted ? "from" : "to", l.remote.c_str(), l.peer.nid, l.peer.pid, reason);
        fail_link(l, r, true);
    };
    if (l.state == LinkState::Connecting) {
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(l.fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err != 0) {
            log_debug("tcp: connect to %08x/%u: %s", l.peer.nid, l.peer.pid, std::strerror(err));
            fail_link(l, r, false);
            return;
        }
        uint8_t nonce[16];
        random_nonce(nonce);
        l.hello = make_hello(self_, l.peer, nonce);
        if (!write_handshake(l.fd, l.hello)) {
            fail_link(l, r, false);
            return;
        }
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
        if (l.accepted && l.state == LinkState::AwaitHello) return fail_link(l, r, true); // a port scan, say
        return refuse("connection closed during the handshake (wrong job secret?)");
    case HandshakeRead::Done: break;
    }
    switch (l.state) {
    case LinkState::AwaitHello: {
        if (!handshake_valid(l.incoming, HandshakeStep::Hello, &why)) return refuse(why);
        l.peer = {l.incoming.from_nid, l.incoming.from_pid};
        if (PeerId{l.incoming.to_nid, l.incoming.to_pid} != self_) return refuse("addressed to another endpoint");
        if (cfg_.secret.empty()) return refuse("this process has no job secret");
        l.hello = l.incoming;
        uint8_t nonce[16];
        random_nonce(nonce);
        l.challenge = make_challenge(cfg_.secret, self_, l.hello, nonce);
        if (!write_handshake(l.fd, l.challenge)) return fail_link(l, r, true);
        std::lock_guard g(l.tx_mutex);
        l.state = LinkState::AwaitProof;
        return;
    }
    case LinkState::AwaitChallenge: {
        if (!handshake_valid(l.incoming, HandshakeStep::Challenge, &why)) return refuse(why);
        if (PeerId{l.incoming.from_nid, l.incoming.from_pid} != l.peer ||
            PeerId{l.incoming.to_nid, l.incoming.to_pid} != self_)
            return refuse("the endpoint that answered is not the one called");
        if (!challenge_authentic(cfg_.secret, l.hello, l.incoming))
            return refuse("the peer does not know the job secret");
        l.challenge = l.incoming;
        if (!write_handshake(l.fd, make_proof(cfg_.secret, self_, l.hello, l.challenge))) return fail_link(l, r, false);
        return become_up(l, r);
    }
    case LinkState::AwaitProof: {
        if (!handshake_valid(l.incoming, HandshakeStep::Proof, &why)) return refuse(why);
        if (PeerId{l.incoming.from_nid, l.incoming.from_pid} != l.peer)
            return refuse("the proof comes from another endpoint");
        if (!proof_authentic(cfg_.secret, l.hello, l.challenge, l.incoming))
            return refuse("the peer does not know the job secret");
        {
            std::lock_guard g(links_mutex_);
            --pending_accepts_;
            // Replies to the peer go over its connection unless we opened one of our own first.
            send_links_.try_emplace(l.peer.key(), &l);
        }
        return become_up(l, r);
    }
    default: return;
    }
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
    const bool was_pending_accept =
        l.accepted && (l.state == LinkState::AwaitHello || l.state == LinkState::AwaitProof);
    std::deque<TcpOutMessage> abandoned;
    {
        std::lock_guard g(l.tx_mutex);
        l.state = LinkState::Dead;
        abandoned.swap(l.backlog);
        epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, l.fd, nullptr);
        ::close(l.fd);
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
        if (was_pending_accept) --pending_accepts_;
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
    std::vector<TcpLink *> late;
    {
        std::lock_guard g(links_mutex_);
        for (auto &l : owned_)
            if (!l->reported && l->handshaking() && now >= l->deadline_ms) late.push_back(l.get());
    }
    for (TcpLink *l : late) {
        log_error("tcp: %s %s did not complete its handshake in %d ms; closing it",
                  l->accepted ? "a connection from" : "the connection to", l->remote.c_str(), cfg_.connect_timeout_ms);
        fail_link(*l, r, l->accepted);
    }
}

void TcpTransport::service(void *tag, uint32_t events, Receiver &r) {
    // Caller holds poll_mutex_.
    if (tag == &g_listen_tag) {
        accept_all();
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
    for (int i = 0; i < k; ++i) service(evs[i].data.ptr, evs[i].events, r);
    return k > 0 ? k : 0;
}

void TcpTransport::flush_held() {
    // Under held_mutex_ throughout (then each link's tx_mutex; send() never holds both): the list
    // keeps its capacity, so holding an ack allocates nothing.
    std::lock_guard hg(held_mutex_);
    bool broken = false;
    for (TcpLink *l : held_list_) {
        std::lock_guard g(l->tx_mutex);
        // With a backlog the held bytes go first when it is pushed (EPOLLOUT is already asked for).
        if (l->state != LinkState::Up || l->held.empty() || !l->backlog.empty()) continue;
        const Push p = write_raw(l->fd, {&l->held, &l->held_off});
        if (p == Push::Blocked) want_write(*l, true);
        if (p == Push::Broken) l->broken = broken = true;
    }
    held_list_.clear();
    held_links_.store(0, std::memory_order_seq_cst);
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
    if (bundle_held_.exchange(false, std::memory_order_relaxed) && held_links_.load(std::memory_order_relaxed) > 0)
        flush_held();
}

int TcpTransport::poll(Receiver &r) {
    // With no connection at all only the listening socket matters; look at it now and then (and
    // without the lock: this is every turn of every waiting thread on a machine without TCP peers).
    if (live_links_.load(std::memory_order_relaxed) == 0) {
        // A racy count is fine: it only spaces out the looks at the listening socket (system
        // calls that a frame arriving on another transport would wait for; see ShmTransport::poll).
        const unsigned k = idle_polls_.load(std::memory_order_relaxed) + 1;
        idle_polls_.store(k, std::memory_order_relaxed);
        if ((k & 1023) != 0) return 0;
    }
    if (held_links_.load(std::memory_order_relaxed) > 0) flush_held();
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
    std::lock_guard lock(poll_mutex_);
    for (int i = 0; i < k; ++i) service(evs[i].data.ptr, evs[i].events, r);
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
    std::lock_guard g(links_mutex_);
    for (auto &l : owned_) {
        std::lock_guard t(l->tx_mutex);
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
