// SPDX-License-Identifier: BSD-3-Clause
// The settings declarations (common/settings.hpp): value syntax, defaults, ranges, bad values,
// and the catalog portico-info prints.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>

#include "common/common_settings.hpp"
#include "common/log.hpp"
#include "common/netif.hpp"
#include "common/settings.hpp"
#include "transport/shm/shm_settings.hpp"
#include "transport/tcp/tcp_settings.hpp"

namespace portico::settings {
namespace {

// Names no real setting uses, so that the tests never disturb one.
constexpr Number kTestNumber{"PORTICO_TEST_NUMBER", "engine", 100, 10, 1000, "a test number"};
constexpr Bytes kTestBytes{"PORTICO_TEST_BYTES", "transport.shm", 256 * 1024, 16 * 1024,
                           UINT64_MAX,           "a test size",   true};
constexpr Boolean kTestBool{"PORTICO_TEST_BOOL", "common", true, "a test switch"};
constexpr Choice kTestChoice{"PORTICO_TEST_CHOICE", "engine", "auto", "auto|shm|tcp", "a test choice"};
constexpr Text kTestText{"PORTICO_TEST_TEXT", "launcher", "ssh", "a test string"};

// Sets a variable for one test and restores the old state afterwards.
class Env {
public:
    Env(const char *name, const char *value) : name_(name) {
        if (const char *old = std::getenv(name)) old_ = old;
        if (value)
            setenv(name, value, 1);
        else
            unsetenv(name);
    }
    ~Env() {
        if (old_)
            setenv(name_, old_->c_str(), 1);
        else
            unsetenv(name_);
    }

private:
    const char *name_;
    std::optional<std::string> old_;
};

TEST(SettingsParse, Numbers) {
    std::string why;
    EXPECT_EQ(parse_number("0", &why), 0u);
    EXPECT_EQ(parse_number("4096", &why), 4096u);
    EXPECT_EQ(parse_number("0x10", &why), 16u);
    EXPECT_EQ(parse_number("010", &why), 8u); // strtoull base 0, as env_u64 always read them
    EXPECT_EQ(parse_number("16k", &why), 16u * 1024);
    EXPECT_EQ(parse_number("16K", &why), 16u * 1024);
    EXPECT_EQ(parse_number("2M", &why), 2u << 20);
    EXPECT_EQ(parse_number("1G", &why), 1u << 30);
    EXPECT_EQ(parse_number("18446744073709551615", &why), UINT64_MAX);
    // Sizes as the clients' standards write them (GASNet's "4MB", GCC UPC's "1T").
    EXPECT_EQ(parse_number("16KB", &why), 16u * 1024);
    EXPECT_EQ(parse_number("4MiB", &why), 4u << 20);
    EXPECT_EQ(parse_number("1T", &why), uint64_t{1} << 40);
}

TEST(SettingsParse, BadNumbers) {
    for (const char *bad : {"", "abc", "-1", " 5", "+5", "12x", "16KBB", "16B", "4Mb", "1.5", "18446744073709551616",
                            "17179869184G", "16777216T"}) {
        std::string why;
        EXPECT_FALSE(parse_number(bad, &why).has_value()) << bad;
        EXPECT_FALSE(why.empty()) << bad;
    }
}

TEST(SettingsParse, Booleans) {
    std::string why;
    for (const char *on : {"1", "2", "yes", "TRUE", "On"}) EXPECT_EQ(parse_boolean(on, &why), true) << on;
    for (const char *off : {"0", "00", "no", "False", "OFF"}) EXPECT_EQ(parse_boolean(off, &why), false) << off;
    EXPECT_FALSE(parse_boolean("maybe", &why).has_value());
    // A plain decimal number only: a size suffix or a number past 64 bits is a typo.
    for (const char *bad : {"1G", "1k", "0x1", "99999999999999999999999", "-1", " 1"})
        EXPECT_FALSE(parse_boolean(bad, &why).has_value()) << bad;
    EXPECT_NE(why.find("not a boolean"), std::string::npos);
}

TEST(Settings, DefaultWhenUnsetOrEmpty) {
    {
        Env e("PORTICO_TEST_NUMBER", nullptr);
        EXPECT_FALSE(kTestNumber.is_set());
        EXPECT_EQ(kTestNumber.get(), 100u);
        EXPECT_TRUE(kTestNumber.resolve().ok());
    }
    {
        Env e("PORTICO_TEST_NUMBER", "");
        EXPECT_FALSE(kTestNumber.is_set());
        EXPECT_EQ(kTestNumber.get(), 100u);
    }
    Env b("PORTICO_TEST_BOOL", nullptr), c("PORTICO_TEST_CHOICE", nullptr), t("PORTICO_TEST_TEXT", nullptr);
    EXPECT_TRUE(kTestBool.get());
    EXPECT_EQ(kTestChoice.get(), "auto");
    EXPECT_EQ(kTestText.get(), "ssh");
}

TEST(Settings, ValueFromTheEnvironment) {
    Env n("PORTICO_TEST_NUMBER", "0x20"), b("PORTICO_TEST_BOOL", "0"), c("PORTICO_TEST_CHOICE", "tcp"),
        t("PORTICO_TEST_TEXT", "rsh -x"), s("PORTICO_TEST_BYTES", "1M");
    EXPECT_EQ(kTestNumber.get(), 32u);
    EXPECT_FALSE(kTestBool.get());
    EXPECT_EQ(kTestChoice.get(), "tcp");
    EXPECT_EQ(kTestText.get(), "rsh -x");
    EXPECT_EQ(kTestBytes.get(), 1u << 20);
}

TEST(Settings, RangeIsEnforced) {
    auto low = kTestNumber.resolve("5");
    EXPECT_EQ(low.value, 10u);
    EXPECT_EQ(low.error, "PORTICO_TEST_NUMBER='5': below the minimum; using 10");
    auto high = kTestNumber.resolve("1k");
    EXPECT_EQ(high.value, 1000u);
    EXPECT_EQ(high.error, "PORTICO_TEST_NUMBER='1k': above the maximum; using 1000");
    EXPECT_TRUE(kTestNumber.resolve("10").ok());
    EXPECT_TRUE(kTestNumber.resolve("1000").ok());
    auto odd = kTestBytes.resolve("100000");
    EXPECT_EQ(odd.value, 65536u);
    EXPECT_EQ(odd.error, "PORTICO_TEST_BYTES='100000': not a power of two; using 65536 (64 KiB)");
    EXPECT_EQ(kTestBytes.resolve("8K").value, 16u * 1024);
}

TEST(Settings, BadValueIsAnErrorWithTheDefault) {
    auto r = kTestNumber.resolve("lots");
    EXPECT_EQ(r.value, 100u);
    EXPECT_EQ(r.error, "PORTICO_TEST_NUMBER='lots': not a number; using the default 100");
    auto b = kTestBool.resolve("maybe");
    EXPECT_TRUE(b.value);
    EXPECT_NE(b.error.find("PORTICO_TEST_BOOL='maybe': not a boolean"), std::string::npos);
    auto c = kTestChoice.resolve("udp");
    EXPECT_EQ(c.value, "auto");
    EXPECT_EQ(c.error, "PORTICO_TEST_CHOICE='udp': expected one of auto|shm|tcp");
    EXPECT_EQ(kTestText.check("anything at all"), "");
}

TEST(Settings, GetReportsOnStderrAndGoesOn) {
    Env e("PORTICO_TEST_NUMBER", "12x");
    testing::internal::CaptureStderr();
    EXPECT_EQ(kTestNumber.get(), 100u);
    EXPECT_EQ(kTestNumber.get(), 100u); // reported once
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("error: PORTICO_TEST_NUMBER='12x': not a number (trailing 'x'"), std::string::npos) << err;
    EXPECT_EQ(err.find("PORTICO_TEST_NUMBER", err.find("PORTICO_TEST_NUMBER") + 1), std::string::npos) << err;
}

TEST(Settings, Descriptions) {
    EXPECT_EQ(kTestNumber.default_text(), "100");
    EXPECT_EQ(kTestNumber.range_text(), "10 .. 1000");
    EXPECT_EQ(kTestBytes.default_text(), "262144 (256 KiB)");
    EXPECT_EQ(kTestBytes.range_text(), "at least 16384 (16 KiB), a power of two");
    EXPECT_EQ(kTestBool.default_text(), "1");
    EXPECT_EQ(kTestBool.range_text(), "0 or 1");
    EXPECT_EQ(kTestChoice.range_text(), "auto|shm|tcp");
    EXPECT_STREQ(kTestBytes.layer, "transport.shm");
    EXPECT_STREQ(type_name(kTestBytes.type), "bytes");
}

// The name's prefix: the clients' variables are named as their standards name them.
std::string prefix_of_layer(const std::string &layer) {
    if (layer == "gasnet") return "GASNET_";
    if (layer == "upc") return "UPC_";
    if (layer == "psm2") return "PSM2_";
    if (layer == "bootstrap.launchers") return ""; // the launchers' own: PMI_*, SLURM_*, ...
    return "PORTICO_";
}

TEST(SettingsCatalog, EveryDeclarationIsSound) {
    std::set<std::string> names, layers;
    for (auto table : tables()) {
        // One table per layer, and every declaration of a table names the table's layer.
        EXPECT_TRUE(layers.insert(table[0]->layer).second) << table[0]->layer << " registered twice";
        for (const Setting *s : table) {
            EXPECT_STREQ(s->layer, table[0]->layer) << s->name;
            EXPECT_TRUE(names.insert(s->name).second) << s->name << " declared twice";
            EXPECT_EQ(std::string(s->name).rfind(prefix_of_layer(s->layer), 0), 0u) << s->name;
            EXPECT_NE(std::string(s->description), "") << s->name;
            // The default must be a valid value, or every unset variable would be "bad".
            if (s->type == Type::number || s->type == Type::bytes) {
                EXPECT_LE(s->lo, s->def) << s->name;
                EXPECT_LE(s->def, s->hi) << s->name;
                if (s->power_of_two) {
                    EXPECT_EQ(s->def & (s->def - 1), 0u) << s->name;
                }
            }
            if (s->type == Type::choice) {
                EXPECT_EQ(s->check(s->def_text), "") << s->name;
            }
        }
    }
    // The ones portico-info's hand-kept list used to miss.
    for (const char *n :
         {"PORTICO_TRANSPORT", "PORTICO_TCP_PORT_BASE", "PORTICO_TCP_MAX_LINKS", "PORTICO_TCP_CONNECT_TIMEOUT_MS",
          "PORTICO_TCP_KEEPALIVE_S", "PORTICO_JOB_SECRET", "PORTICO_LAUNCHER_WATCH", "PORTICO_BENCH_SEGMENT",
          "GASNET_PSHM", "UPC_SHARED_HEAP_SIZE", "PSM2_MULTI_EP"})
        EXPECT_EQ(names.count(n), 1u) << n;
    // Every layer that reads settings registered its table (the registry is filled by the layers'
    // portico_settings_table() calls, not by a list here: these are the ones of this tree).
    for (const char *l : {"common", "bootstrap", "transport", "transport.shm", "transport.tcp", "engine", "launcher",
                          "bench", "gasnet", "upc", "psm2", "bootstrap.launchers"})
        EXPECT_EQ(layers.count(l), 1u) << l;
}

// Values only code can judge are reported, and what is used instead said, never silently turned
// into something else (PORTICO_NID=garbage was 0.0.0.0; PORTICO_IFACE=<no such interface> made
// every host of a job believe it was 127.0.0.1).
TEST(Settings, NidAndInterfaceAreCheckedNotGuessed) {
    EXPECT_EQ("", kNid.check("10.1.2.3"));
    EXPECT_EQ("", kNid.check("0x0a010203"));
    EXPECT_EQ("", kNid.check("167838211"));
    for (const char *bad : {"garbage", "10.1.2", "4294967296", "10.1.2.3.4", "-1"}) {
        Env e("PORTICO_NID", bad);
        const auto r = kNid.resolve();
        EXPECT_FALSE(r.ok()) << bad;
        EXPECT_EQ("", r.value) << bad;
        EXPECT_NE(r.error.find("ignored, as if unset"), std::string::npos) << r.error;
    }
    {
        Env e("PORTICO_NID", "10.1.2.3");
        EXPECT_EQ(0x0a010203u, local_nid());
    }
    EXPECT_EQ("", kIface.check("lo"));
    Env e("PORTICO_IFACE", "no-such-if0");
    const auto r = kIface.resolve();
    EXPECT_FALSE(r.ok());
    EXPECT_NE(r.error.find("no such interface"), std::string::npos) << r.error;
    EXPECT_EQ(first_external_ipv4().value_or(0x7f000001u), local_nid()) << "the default rule, not 127.0.0.1";
}

TEST(Settings, LinkTablesAndPortBaseHaveUsableRanges) {
    EXPECT_NE("", kShmMaxLinks.check("0"));
    EXPECT_NE("", kTcpMaxLinks.check("0"));
    EXPECT_EQ("", kTcpPortBase.check("49152"));
    EXPECT_NE("", kTcpPortBase.check("49153")) << "PTL_PID_ANY's pids up to 16383 need their ports";
    EXPECT_NE("", kTcpPortBase.check("70000"));
    EXPECT_NE("", kTcpPortBase.check("0"));
}

} // namespace
} // namespace portico::settings

// The logger names the layer of the file a line comes from, and PORTICO_LOG_LEVEL's syntax.
namespace portico {
TEST(Log, LayerOfASourceFile) {
    char buf[64];
    EXPECT_STREQ(log_layer_of("/work/src/engine/ni.cpp", buf, sizeof buf), "engine");
    EXPECT_STREQ(log_layer_of("/work/src/transport/shm/ring.hpp", buf, sizeof buf), "transport.shm");
    EXPECT_STREQ(log_layer_of("/work/src/transport/endpoint.cpp", buf, sizeof buf), "transport");
    EXPECT_STREQ(log_layer_of("/b/layer-views/portico_engine/transport/transport.hpp", buf, sizeof buf), "transport");
    EXPECT_STREQ(log_layer_of("/work/src/gasnet/core.cpp", buf, sizeof buf), "gasnet");
    EXPECT_STREQ(log_layer_of("/work/tools/portico-run/job.cpp", buf, sizeof buf), "portico-run");
    EXPECT_STREQ(log_layer_of("elsewhere.cpp", buf, sizeof buf), "portico");
}
TEST(Log, LevelSyntax) {
    EXPECT_EQ(settings::log_level_problem("warn"), "");
    EXPECT_EQ(settings::log_level_problem("error,engine=debug,transport.shm=trace"), "");
    EXPECT_NE(settings::log_level_problem("loud"), "");
    EXPECT_NE(settings::log_level_problem("warn,engine"), "");
    EXPECT_NE(settings::log_level_problem("warn,=debug"), "");
    EXPECT_NE(settings::log_level_problem("engine=debug,warn"), "");
}
} // namespace portico
