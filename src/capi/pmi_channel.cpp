// SPDX-License-Identifier: BSD-3-Clause
// libpmi's entry point into libportals (capi/pmi_channel.h): the PMI-1 API's operations on a
// bootstrap::PmiClient of its own, which shares the process's launcher connection (and its lock)
// with the job service's client and counts as one of its users until PMI_Finalize.
#include "capi/pmi_channel.h"

#include <portico/pmi/pmi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unistd.h>
#include <vector>

#include "bootstrap/job.hpp"
#include "bootstrap/pmi_client.hpp"

using portico::bootstrap::Job;
using portico::bootstrap::PmiClient;

#define PORTICO_PRIVATE extern "C" __attribute__((visibility("default")))

namespace {

// The sizes a job of one reports (hydra's).
constexpr int kAloneKvsnameMax = 256, kAloneKeylenMax = 64, kAloneVallenMax = 1024;

struct AppPmi {
    std::mutex mutex;
    bool joined = false;
    std::unique_ptr<PmiClient> client;            // nullptr: a job of one
    std::map<std::string, std::string> alone_kvs; // a job of one's key-value space
    std::string kvsname;
};

AppPmi &app() {
    static AppPmi *a = new AppPmi; // never destroyed: PMI calls may come from exit handlers
    return *a;
}

int fail(int code, const std::string &what, char *why, size_t why_len) {
    if (why && why_len > 0) {
        const size_t n = std::min(what.size(), why_len - 1);
        std::memcpy(why, what.data(), n);
        why[n] = '\0';
    }
    return code;
}

// text (and its NUL) into out[0..length), or PMI_ERR_INVALID_LENGTH.
int copy_out(const std::string &text, char *out, int length, const char *what, char *why, size_t why_len) {
    if (!out) return fail(PMI_ERR_INVALID_ARG, std::string(what) + ": NULL buffer", why, why_len);
    if (length < 0 || text.size() + 1 > static_cast<size_t>(length))
        return fail(PMI_ERR_INVALID_LENGTH,
                    std::string(what) + " needs " + std::to_string(text.size() + 1) + " bytes, the buffer has " +
                        std::to_string(length),
                    why, why_len);
    std::memcpy(out, text.c_str(), text.size() + 1);
    return PMI_SUCCESS;
}

bool carried(const std::string &s) { return !s.empty() && s.find_first_of(" \n\r\\") == std::string::npos; }
// A value may hold backslashes: the client escapes them on the wire (bootstrap/pmi_client.cpp).
bool carried_value(const std::string &s) { return !s.empty() && s.find_first_of(" \n\r") == std::string::npos; }

// PMI_ERR_* for a key or value the wire cannot carry, else PMI_SUCCESS.
int check_key(const AppPmi &a, const char *key, char *why, size_t why_len) {
    if (!key) return fail(PMI_ERR_INVALID_ARG, "NULL key", why, why_len);
    const std::string k = key;
    if (!carried(k))
        return fail(PMI_ERR_INVALID_KEY, "key '" + k + "' is empty or holds a space, newline or backslash", why,
                    why_len);
    const int max = a.client ? a.client->max_key_length() : kAloneKeylenMax - 1;
    if (k.size() > static_cast<size_t>(max))
        return fail(PMI_ERR_INVALID_KEY_LENGTH,
                    "key of " + std::to_string(k.size()) + " characters; at most " + std::to_string(max), why, why_len);
    return PMI_SUCCESS;
}

int check_value(const AppPmi &a, const char *value, char *why, size_t why_len) {
    if (!value) return fail(PMI_ERR_INVALID_ARG, "NULL value", why, why_len);
    const std::string v = value;
    if (!carried_value(v)) return fail(PMI_ERR_INVALID_VAL, "value is empty or holds a space or newline", why, why_len);
    const int max = a.client ? a.client->max_value_length() : kAloneVallenMax - 1;
    if (v.size() > static_cast<size_t>(max))
        return fail(PMI_ERR_INVALID_VAL_LENGTH,
                    "value of " + std::to_string(v.size()) + " characters; at most " + std::to_string(max), why,
                    why_len);
    return PMI_SUCCESS;
}

// Runs f on the joined state; launcher errors become PMI_FAIL with their message.
template <class F> int joined(const char *what, char *why, size_t why_len, F &&f) {
    AppPmi &a = app();
    std::lock_guard g(a.mutex);
    if (!a.joined) return fail(PMI_ERR_INIT, std::string(what) + " before PMI_Init", why, why_len);
    try {
        return f(a);
    } catch (const std::exception &e) {
        return fail(PMI_FAIL, e.what(), why, why_len);
    }
}

int join(portico_pmi_identity *out, char *why, size_t why_len) {
    if (!out) return fail(PMI_ERR_INVALID_ARG, "NULL identity", why, why_len);
    AppPmi &a = app();
    std::lock_guard g(a.mutex);
    try {
        if (!a.joined) {
            a.client = PmiClient::from_environment();
            a.kvsname = a.client ? a.client->kvsname() : "portico_alone_" + std::to_string(getpid());
            a.alone_kvs.clear();
            a.joined = true;
        }
    } catch (const std::exception &e) {
        return fail(PMI_FAIL, e.what(), why, why_len);
    }
    *out = portico_pmi_identity{};
    const char *spawned = std::getenv("PMI_SPAWNED");
    out->spawned = spawned && std::strcmp(spawned, "1") == 0 ? 1 : 0;
    out->launched = a.client ? 1 : 0;
    out->rank = a.client ? a.client->rank() : 0;
    out->size = a.client ? a.client->size() : 1;
    out->kvsname_max = std::max<int>(kAloneKvsnameMax, static_cast<int>(a.kvsname.size()) + 1);
    out->keylen_max = (a.client ? a.client->max_key_length() : kAloneKeylenMax - 1) + 1;
    out->vallen_max = (a.client ? a.client->max_value_length() : kAloneVallenMax - 1) + 1;
    std::snprintf(out->protocol, sizeof out->protocol, "%s", a.client ? a.client->protocol() : "none");
    return PMI_SUCCESS;
}

int leave(char *why, size_t why_len) {
    return joined("PMI_Finalize", why, why_len, [](AppPmi &a) {
        a.joined = false;
        std::unique_ptr<PmiClient> c = std::move(a.client);
        if (c) c->finalize(); // the launcher's finalize if the job service has left too
        return PMI_SUCCESS;
    });
}

int kvsname(char *name, int length, char *why, size_t why_len) {
    return joined("PMI_KVS_Get_my_name", why, why_len,
                  [&](AppPmi &a) { return copy_out(a.kvsname, name, length, "the KVS name", why, why_len); });
}

int put(const char *key, const char *value, char *why, size_t why_len) {
    return joined("PMI_KVS_Put", why, why_len, [&](AppPmi &a) {
        if (const int rc = check_key(a, key, why, why_len); rc != PMI_SUCCESS) return rc;
        if (const int rc = check_value(a, value, why, why_len); rc != PMI_SUCCESS) return rc;
        if (a.client)
            a.client->put(key, value);
        else
            a.alone_kvs[key] = value;
        return PMI_SUCCESS;
    });
}

int get(const char *key, char *value, int length, char *why, size_t why_len) {
    return joined("PMI_KVS_Get", why, why_len, [&](AppPmi &a) {
        if (const int rc = check_key(a, key, why, why_len); rc != PMI_SUCCESS) return rc;
        std::optional<std::string> v;
        if (a.client) {
            v = a.client->get(key);
        } else if (auto it = a.alone_kvs.find(key); it != a.alone_kvs.end()) {
            v = it->second;
        }
        if (!v) return fail(PMI_FAIL, "not found", why, why_len);
        return copy_out(*v, value, length, "the value", why, why_len);
    });
}

int barrier(char *why, size_t why_len) {
    return joined("PMI_Barrier", why, why_len, [](AppPmi &a) {
        if (a.client) a.client->barrier();
        return PMI_SUCCESS;
    });
}

int universe_size(int *size, char *why, size_t why_len) {
    if (!size) return fail(PMI_ERR_INVALID_ARG, "NULL size", why, why_len);
    return joined("PMI_Get_universe_size", why, why_len, [&](AppPmi &a) {
        *size = a.client ? a.client->universe_size() : 1;
        return PMI_SUCCESS;
    });
}

int appnum(int *n, char *why, size_t why_len) {
    if (!n) return fail(PMI_ERR_INVALID_ARG, "NULL appnum", why, why_len);
    return joined("PMI_Get_appnum", why, why_len, [&](AppPmi &a) {
        *n = a.client ? a.client->appnum() : 0;
        return PMI_SUCCESS;
    });
}

int clique(int *ranks, int length, int *count, char *why, size_t why_len) {
    if (!count || (length > 0 && !ranks)) return fail(PMI_ERR_INVALID_ARG, "NULL argument", why, why_len);
    return joined("PMI_Get_clique_ranks", why, why_len, [&](AppPmi &a) {
        std::vector<int> local{0};
        if (a.client) {
            std::optional<std::vector<int>> r = a.client->node_ranks();
            if (!r)
                return fail(PMI_FAIL,
                            "the launcher does not describe the ranks' placement (no PMI_process_mapping, no "
                            "PMIX_LOCAL_PEERS)",
                            why, why_len);
            local = std::move(*r);
        }
        *count = static_cast<int>(local.size());
        for (int i = 0; i < length && i < *count; ++i) ranks[i] = local[static_cast<size_t>(i)];
        return PMI_SUCCESS;
    });
}

int name_service(const char *op, const char *service, char *port, int port_len, char *why, size_t why_len) {
    if (!op || !service) return fail(PMI_ERR_INVALID_ARG, "NULL argument", why, why_len);
    const std::string o = op;
    const bool publish = o == "publish_name", lookup = o == "lookup_name";
    if (!publish && !lookup && o != "unpublish_name")
        return fail(PMI_ERR_INVALID_ARG, "unknown name service request '" + o + "'", why, why_len);
    if ((publish || lookup) && !port) return fail(PMI_ERR_INVALID_ARG, "NULL port", why, why_len);
    if (!carried(service)) return fail(PMI_ERR_INVALID_ARG, "the service name is empty or holds a space", why, why_len);
    if (publish && !carried(port)) return fail(PMI_ERR_INVALID_ARG, "the port is empty or holds a space", why, why_len);
    return joined(o.c_str(), why, why_len, [&](AppPmi &a) {
        if (!a.client) return fail(PMI_FAIL, "no launcher, hence no name service", why, why_len);
        std::string line = "cmd=" + o + " service=" + service;
        if (publish) line += std::string(" port=") + port;
        const std::string expected = publish ? "publish_result" : lookup ? "lookup_result" : "unpublish_result";
        const std::string reply = a.client->request(line + "\n", expected);
        // " rc=0" and, for a lookup, " port=<value>" among the reply's tokens.
        auto token = [&](const std::string &key) -> std::optional<std::string> {
            const std::string k = " " + key + "=";
            const size_t at = (" " + reply).find(k);
            if (at == std::string::npos) return std::nullopt;
            const size_t begin = at + k.size() - 1;
            return reply.substr(begin, reply.find(' ', begin) - begin);
        };
        if (token("rc") != "0") {
            const std::optional<std::string> msg = token("msg");
            return fail(PMI_FAIL, "the launcher refused " + o + ": " + msg.value_or(reply), why, why_len);
        }
        if (!lookup) return PMI_SUCCESS;
        const std::optional<std::string> p = token("port");
        if (!p) return fail(PMI_FAIL, "the launcher's lookup_result has no port", why, why_len);
        return copy_out(*p, port, port_len, "the port", why, why_len);
    });
}

void abort_job(int code, const char *message) {
    const std::string text = message ? message : "";
    if (Job *job = Job::joined()) job->abort(code, text); // tells the peer watch as well
    // A thread blocked in a PMI call holds the lock: then the launcher learns of the end from the
    // exit status (an exit without finalize ends the job under every launcher).
    AppPmi &a = app();
    if (a.mutex.try_lock() && a.client) a.client->abort(code, text); // does not return; the lock dies with us
    if (!text.empty()) std::fprintf(stderr, "%s\n", text.c_str());
    std::fflush(nullptr);
    std::_Exit(code);
}

const portico_pmi_channel kChannel = {
    PORTICO_PMI_CHANNEL_VERSION,
    join,
    leave,
    kvsname,
    put,
    get,
    barrier,
    universe_size,
    appnum,
    clique,
    name_service,
    abort_job,
};

} // namespace

PORTICO_PRIVATE const portico_pmi_channel *portico_pmi_channel_v1(void) { return &kChannel; }
