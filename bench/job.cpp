#include "job.hpp"

#include <cstdio>
#include <cstdlib>
#include <unistd.h>

#include "bench.hpp"
#include "bootstrap/bootstrap_settings.hpp"
#include "bootstrap/pmi_client.hpp"

namespace portico::bench {

namespace {
std::string token_of(const std::string &s) {
    std::string out;
    for (char c : s)
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_') out.push_back(c);
    if (out.size() > 40) out.resize(40);
    return out;
}
} // namespace

Job::Job() {
    try {
        pmi_ = bootstrap::PmiClient::from_environment();
    } catch (const std::exception &e) {
        throw Error(std::string("cannot join the job: ") + e.what());
    }
    if (pmi_) {
        rank_ = pmi_->rank();
        size_ = pmi_->size();
        const char *jid = settings::kJobId.raw();
        id_ = token_of(jid ? std::string(jid) : pmi_->kvsname());
    }
    if (id_.empty()) id_ = "pid" + std::to_string(getpid());
}

Job::~Job() = default;

void Job::barrier() {
    if (pmi_) pmi_->barrier();
}

std::vector<std::string> Job::allgather(const std::string &mine) {
    if (!pmi_) return {mine};
    const std::string prefix = "bench." + std::to_string(seq_++) + ".";
    pmi_->put(prefix + std::to_string(rank_), mine);
    pmi_->barrier();
    std::vector<std::string> all;
    for (int r = 0; r < size_; ++r) {
        auto v = pmi_->get(prefix + std::to_string(r));
        if (!v)
            throw Error("PMI: rank " + std::to_string(r) + " published nothing under " + prefix + std::to_string(r));
        all.push_back(*v);
    }
    return all;
}

void Job::abort(int code, const std::string &message) {
    std::fflush(stdout);
    std::fflush(stderr);
    if (pmi_ && size_ > 1) pmi_->abort(code, message); // does not return
    std::_Exit(code);
}

void Job::finalize() {
    if (pmi_) pmi_->finalize();
}

} // namespace portico::bench
