// The DG_* registry: defaults, parsing, errors, lazy reading and reloading.
#include <unistd.h>

#include <set>

#include "jit/errors.hpp"
#include "jit/log.hpp"
#include "jit/settings.hpp"
#include "jit/settings_parse.hpp"
#include "test_util.hpp"

using namespace deep_gemm::jit;
using dg_test::ScopedEnv;

TEST(Settings, Defaults) {
    ScopedEnv env;
    dg_test::clear_dg_env(env);
    env.set("HOME", "/home/someone");
    const Settings& s = settings();
    EXPECT_EQ(s.cache_dir, std::filesystem::path("/home/someone/.deep_gemm"));
    EXPECT_FALSE(s.use_nvrtc);
    EXPECT_EQ(s.nvcc_compiler, "");
    EXPECT_EQ(s.cpp_standard, 20);
    EXPECT_FALSE(s.debug || s.print_compiler_command || s.print_load_time || s.ptxas_verbose || s.ptxas_check ||
                 s.with_lineinfo || s.dump_ptx || s.dump_sass || s.print_configs);
    EXPECT_EQ(s.cuobjdump, "");
    EXPECT_EQ(s.bf16_gemm_config, "");
}

TEST(Settings, ParsesValues) {
    ScopedEnv env;
    dg_test::clear_dg_env(env);
    env.set("DG_JIT_CACHE_DIR", "/tmp/some where/cache")
        .set("DG_JIT_USE_NVRTC", "TRUE")
        .set("DG_JIT_NVCC_COMPILER", "/opt/cuda/bin/nvcc")
        .set("DG_JIT_CPP_STANDARD", "17")
        .set("DG_JIT_DEBUG", "yes")
        .set("DG_JIT_PRINT_COMPILER_COMMAND", "On")
        .set("DG_JIT_PRINT_LOAD_TIME", "1")
        .set("DG_JIT_PTXAS_VERBOSE", " true ")
        .set("DG_JIT_PTXAS_CHECK", "1")
        .set("DG_JIT_WITH_LINEINFO", "1")
        .set("DG_JIT_DUMP_ASM", "1")
        .set("DG_PRINT_CONFIGS", "1")
        .set("DG_JIT_CUOBJDUMP", "/x/cuobjdump");
    const Settings& s = settings();
    EXPECT_EQ(s.cache_dir, std::filesystem::path("/tmp/some where/cache"));
    EXPECT_TRUE(s.use_nvrtc);
    EXPECT_EQ(s.nvcc_compiler, "/opt/cuda/bin/nvcc");
    EXPECT_EQ(s.cpp_standard, 17);
    EXPECT_TRUE(s.debug && s.print_compiler_command && s.print_load_time && s.ptxas_verbose && s.ptxas_check &&
                s.with_lineinfo && s.print_configs);
    EXPECT_TRUE(s.dump_ptx && s.dump_sass) << "DG_JIT_DUMP_ASM turns on both dumps";
    EXPECT_EQ(s.cuobjdump, "/x/cuobjdump");
}

TEST(Settings, DumpFlagsSeparately) {
    ScopedEnv env;
    dg_test::clear_dg_env(env);
    env.set("DG_JIT_DUMP_PTX", "1");
    EXPECT_TRUE(settings().dump_ptx);
    EXPECT_FALSE(settings().dump_sass);
    env.set("DG_JIT_DUMP_PTX", "0").set("DG_JIT_DUMP_SASS", "1");
    EXPECT_FALSE(settings().dump_ptx);
    EXPECT_TRUE(settings().dump_sass);
}

TEST(Settings, BoolSpellings) {
    for (const char* yes : {"1", "true", "TRUE", "Yes", "on", "ON"}) EXPECT_TRUE(detail::parse_bool("X", yes)) << yes;
    for (const char* no : {"0", "false", "False", "no", "OFF"}) EXPECT_FALSE(detail::parse_bool("X", no)) << no;
    for (const char* bad : {"maybe", "2", "-1", "y", "truee"}) EXPECT_THROW(detail::parse_bool("X", bad), ConfigError) << bad;
}

TEST(Settings, MalformedBoolNamesVariableValueAndFix) {
    ScopedEnv env;
    dg_test::clear_dg_env(env);
    env.set("DG_JIT_USE_NVRTC", "maybe");
    try {
        settings();
        FAIL() << "expected ConfigError";
    } catch (const ConfigError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("DG_JIT_USE_NVRTC='maybe'"), std::string::npos) << what;
        EXPECT_NE(what.find("use 0 or 1"), std::string::npos) << what;
    }
    // Still an error on the next call (nothing half-parsed was kept), and fine once fixed.
    EXPECT_THROW(settings(), ConfigError);
    env.set("DG_JIT_USE_NVRTC", "1");
    EXPECT_TRUE(settings().use_nvrtc);
}

TEST(Settings, MalformedCppStandard) {
    ScopedEnv env;
    dg_test::clear_dg_env(env);
    for (const char* bad : {"abc", "14", "2a", "23x"}) {
        env.set("DG_JIT_CPP_STANDARD", bad);
        try {
            settings();
            FAIL() << "expected ConfigError for " << bad;
        } catch (const ConfigError& e) {
            const std::string what = e.what();
            EXPECT_NE(what.find(std::string("DG_JIT_CPP_STANDARD='") + bad + "'"), std::string::npos) << what;
            EXPECT_NE(what.find("17 or 20"), std::string::npos) << what;
        }
    }
    env.set("DG_JIT_CPP_STANDARD", "c++20");
    EXPECT_EQ(settings().cpp_standard, 20);
}

TEST(Settings, MalformedOtherBools) {
    ScopedEnv env;
    dg_test::clear_dg_env(env);
    for (const auto& info : setting_registry()) {
        if (info.type != "bool") continue;
        env.set(info.name, "perhaps");
        try {
            settings();
            ADD_FAILURE() << info.name << " accepted 'perhaps'";
        } catch (const ConfigError& e) {
            EXPECT_NE(std::string(e.what()).find(info.name + "='perhaps'"), std::string::npos) << e.what();
        }
        env.set(info.name, std::nullopt);
    }
}

TEST(Settings, ReadLazilyAndReloaded) {
    ScopedEnv env;
    dg_test::clear_dg_env(env);
    env.set("DG_JIT_CACHE_DIR", "/tmp/first");
    const Settings& first = settings();
    EXPECT_EQ(first.cache_dir, std::filesystem::path("/tmp/first"));
    // Without a reload the cached values stay (the hot path never calls getenv).
    ::setenv("DG_JIT_CACHE_DIR", "/tmp/second", 1);
    EXPECT_EQ(settings().cache_dir, std::filesystem::path("/tmp/first"));
    reload_settings();
    EXPECT_EQ(settings().cache_dir, std::filesystem::path("/tmp/second"));
    // The old reference stays valid.
    EXPECT_EQ(first.cache_dir, std::filesystem::path("/tmp/first"));
}

// Kept verbatim: the BF16 host code parses it (and reports a malformed value at the first dense BF16 call),
// so other ops are unaffected by a bad value.
TEST(Settings, Bf16GemmConfigKeptVerbatimAndReloaded) {
    ScopedEnv env;
    dg_test::clear_dg_env(env);
    env.set("DG_BF16_GEMM_CONFIG", "128,256,0,1");
    EXPECT_EQ(settings().bf16_gemm_config, "128,256,0,1");
    env.set("DG_BF16_GEMM_CONFIG", "not a config");
    EXPECT_EQ(settings().bf16_gemm_config, "not a config");
    env.set("DG_BF16_GEMM_CONFIG", "");
    EXPECT_EQ(settings().bf16_gemm_config, "");
}

TEST(Settings, RelativeCacheDirBecomesAbsolute) {
    ScopedEnv env;
    dg_test::clear_dg_env(env);
    env.set("DG_JIT_CACHE_DIR", "rel/cache");
    EXPECT_TRUE(settings().cache_dir.is_absolute());
    EXPECT_EQ(settings().cache_dir, (std::filesystem::current_path() / "rel/cache").lexically_normal());
}

TEST(Settings, NoHomeFallsBackToPerUserTempDirWithOneWarning) {
    ScopedEnv env;
    dg_test::clear_dg_env(env);
    env.set("HOME", std::nullopt).set("TMPDIR", std::nullopt);
    std::vector<std::string> warnings;
    set_log_sink([&](LogLevel level, const std::string& message) {
        if (level == LogLevel::kWarning) warnings.push_back(message);
    });
    const std::filesystem::path expected = "/tmp/deep_gemm-" + std::to_string(::getuid());
    EXPECT_EQ(settings().cache_dir, expected);
    reload_settings();
    EXPECT_EQ(settings().cache_dir, expected);
    set_log_sink({});
    ASSERT_EQ(warnings.size(), 1u) << "the fallback is said once per process";
    EXPECT_NE(warnings[0].find("HOME is not set"), std::string::npos);
    EXPECT_NE(warnings[0].find(expected.string()), std::string::npos);
}

TEST(Settings, RegistryCoversEveryVariable) {
    std::set<std::string> names;
    for (const auto& info : setting_registry()) {
        EXPECT_FALSE(info.doc.empty()) << info.name;
        EXPECT_TRUE(info.type == "bool" || info.type == "int" || info.type == "path" || info.type == "string") << info.name;
        names.insert(info.name);
    }
    for (const char* name :
         {"DG_JIT_CACHE_DIR", "DG_JIT_USE_NVRTC", "DG_JIT_NVCC_COMPILER", "DG_JIT_CPP_STANDARD", "DG_JIT_DEBUG",
          "DG_JIT_PRINT_COMPILER_COMMAND", "DG_JIT_PRINT_LOAD_TIME", "DG_JIT_PTXAS_VERBOSE", "DG_JIT_PTXAS_CHECK",
          "DG_JIT_WITH_LINEINFO", "DG_JIT_DUMP_PTX", "DG_JIT_DUMP_SASS", "DG_JIT_DUMP_ASM", "DG_JIT_USE_RUNTIME_API",
          "DG_PRINT_CONFIGS", "DG_JIT_CUOBJDUMP", "DG_BF16_GEMM_CONFIG"}) {
        EXPECT_EQ(names.count(name), 1u) << name;
    }
}

TEST(Log, SinkReceivesRecordsAndExceptionsAreSwallowed) {
    std::vector<std::pair<LogLevel, std::string>> records;
    set_log_sink([&](LogLevel level, const std::string& message) { records.emplace_back(level, message); });
    log(LogLevel::kInfo, "hello");
    log(LogLevel::kError, "bad");
    set_log_sink([](LogLevel, const std::string&) { throw std::runtime_error("sink failure"); });
    EXPECT_NO_THROW(log(LogLevel::kWarning, "dropped"));
    set_log_sink({});
    ASSERT_EQ(records.size(), 2u);
    EXPECT_EQ(records[0].first, LogLevel::kInfo);
    EXPECT_EQ(records[1].second, "bad");
    EXPECT_EQ(static_cast<int>(LogLevel::kWarning), 30);
}
