// SHA-256, include scanning, the cache key and manifests.
#include <fcntl.h>
#include <sys/stat.h>

#include "jit/cache.hpp"
#include "jit/compiler.hpp"
#include "jit/include_scan.hpp"
#include "jit/sha256.hpp"
#include "test_util.hpp"

using namespace deep_gemm::jit;
using namespace deep_gemm::jit::detail;
namespace fs = std::filesystem;

TEST(Sha256, KnownVectors) {
    EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
              "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    Sha256 chunked;
    const std::string block(1000, 'a');
    for (int i = 0; i < 1000; ++i) chunked.update(block);
    EXPECT_EQ(chunked.hex_digest(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    // Split points do not matter.
    Sha256 split;
    split.update("ab");
    split.update("c");
    EXPECT_EQ(split.hex_digest(), sha256_hex("abc"));
}

TEST(IncludeScan, ParsesIncludeLines) {
    const std::string text =
        "#include <a/b.cuh>\n"
        "  #  include   \"c.cuh\"  // comment\n"
        "// #include <not/this.cuh>\n"
        "#pragma once\n"
        "#include<d.h>\n"
        "#define X 1\n";
    const std::vector<std::string> expected = {"<a/b.cuh", "\"c.cuh", "<d.h"};
    EXPECT_EQ(parse_include_lines(text), expected);
}

TEST(IncludeScan, FindsTransitiveHeadersUnderRootOnly) {
    dg_test::TempDir dir;
    const fs::path root = dir.path() / "include";
    dg_test::write_text(root / "deep_gemm/a.cuh", "#include \"common/b.cuh\"\n#include <cuda.h>\n");
    dg_test::write_text(root / "deep_gemm/common/b.cuh", "#include <deep_gemm/c.cuh>\n#include \"../a.cuh\"\n");
    dg_test::write_text(root / "deep_gemm/c.cuh", "// leaf\n");
    dg_test::write_text(root / "deep_gemm/unused.cuh", "// never included\n");
    const auto headers = scan_includes("#include <deep_gemm/a.cuh>\n#include <cstdint>\n", root);
    std::vector<std::string> names;
    for (const auto& h : headers) names.push_back(h.relative_path);
    const std::vector<std::string> expected = {"deep_gemm/a.cuh", "deep_gemm/c.cuh", "deep_gemm/common/b.cuh"};
    EXPECT_EQ(names, expected);
    EXPECT_EQ(headers[1].content, "// leaf\n");
}

// A header's content and digest are kept per process while its stat is unchanged: a rewrite of the same size
// (another modification time) is read again, and so is a file replaced by another one (another inode).
TEST(IncludeScan, RereadsAHeaderWhoseStatChanged) {
    dg_test::TempDir dir;
    const fs::path root = dir.path() / "include";
    const fs::path header = root / "deep_gemm/a.cuh";
    dg_test::write_text(header, "int a;\n");
    const std::string source = "#include <deep_gemm/a.cuh>\n";
    const auto first = scan_includes(source, root);
    ASSERT_EQ(first.size(), 1u);
    EXPECT_EQ(first[0].digest, sha256_hex("int a;\n"));
    EXPECT_EQ(scan_includes(source, root)[0].digest, first[0].digest) << "unchanged: the same digest";

    dg_test::write_text(header, "int b;\n");  // same size; make sure the modification time differs too
    struct timespec times[2] = {{0, UTIME_OMIT}, {12345, 678}};
    ASSERT_EQ(::utimensat(AT_FDCWD, header.c_str(), times, 0), 0);
    const auto second = scan_includes(source, root);
    EXPECT_EQ(second[0].content, "int b;\n");
    EXPECT_EQ(second[0].digest, sha256_hex("int b;\n"));

    const fs::path replacement = root / "deep_gemm/a.cuh.new";
    dg_test::write_text(replacement, "int c;\n");
    ASSERT_EQ(::utimensat(AT_FDCWD, replacement.c_str(), times, 0), 0);  // same size and time as before
    fs::rename(replacement, header);
    EXPECT_EQ(scan_includes(source, root)[0].content, "int c;\n") << "another inode";
}

namespace {
KeyInputs sample_inputs() {
    KeyInputs in;
    in.name = "sm90_fp8_gemm_1d2d";
    in.code = "#include <deep_gemm/a.cuh>\n";
    in.headers = {{"deep_gemm/a.cuh", "int a;"}};
    in.compiler_kind = "nvcc";
    in.compiler_version = "release 13.0, V13.0.88";
    in.flags = {"-cubin", "-std=c++20", std::string("-I") + kIncludePlaceholder};
    in.arch = "sm_90a";
    in.options = "ptxas_check=0";
    return in;
}
}  // namespace

TEST(CacheKey, EveryInputChangesTheKey) {
    const std::string base = compute_key(sample_inputs());
    EXPECT_EQ(base.size(), 32u);
    EXPECT_EQ(base, compute_key(sample_inputs())) << "deterministic";
    std::vector<std::pair<std::string, KeyInputs>> variants;
    auto add = [&](const std::string& what, auto change) {
        KeyInputs in = sample_inputs();
        change(in);
        variants.emplace_back(what, in);
    };
    add("name", [](KeyInputs& in) { in.name = "other"; });
    add("source", [](KeyInputs& in) { in.code += " "; });
    add("header content", [](KeyInputs& in) { in.headers[0].content = "int b;"; });
    add("header path", [](KeyInputs& in) { in.headers[0].relative_path = "deep_gemm/b.cuh"; });
    add("extra header", [](KeyInputs& in) { in.headers.push_back({"deep_gemm/x.cuh", ""}); });
    add("compiler kind", [](KeyInputs& in) { in.compiler_kind = "nvrtc"; });
    add("compiler version", [](KeyInputs& in) { in.compiler_version = "release 13.0, V13.0.89"; });
    add("flag", [](KeyInputs& in) { in.flags[1] = "-std=c++17"; });
    add("extra flag", [](KeyInputs& in) { in.flags.push_back("-lineinfo"); });
    add("arch", [](KeyInputs& in) { in.arch = "sm_90"; });
    add("options", [](KeyInputs& in) { in.options = "ptxas_check=1"; });
    // Field boundaries matter: moving text from one field into the next is a different key.
    add("boundary", [](KeyInputs& in) {
        in.name = "sm90_fp8_gemm_1d2";
        in.code = "d" + in.code;
    });
    for (const auto& [what, in] : variants) EXPECT_NE(compute_key(in), base) << what;
}

TEST(CacheKey, HeaderScanOfCopiedTreeGivesSameKey) {
    dg_test::TempDir a, b;
    dg_test::copy_tree(dg_test::kTestInclude, a.path() / "site-packages/deep_gemm/include");
    dg_test::copy_tree(dg_test::kTestInclude, b.path() / "other place/include");
    const std::string code = dg_test::wgmma_source().code;
    KeyInputs in_a = sample_inputs(), in_b = sample_inputs();
    in_a.headers = scan_includes(code, a.path() / "site-packages/deep_gemm/include");
    in_b.headers = scan_includes(code, b.path() / "other place/include");
    ASSERT_EQ(in_a.headers.size(), 2u);
    EXPECT_EQ(compute_key(in_a), compute_key(in_b));
    // Change one byte of a transitively included header.
    dg_test::write_text(b.path() / "other place/include/dg_test/common.cuh",
                        dg_test::read_text(dg_test::kTestInclude / "dg_test/common.cuh") + "\n");
    in_b.headers = scan_includes(code, b.path() / "other place/include");
    EXPECT_NE(compute_key(in_a), compute_key(in_b));
}

TEST(CacheKey, EntryDirName) {
    EXPECT_EQ(entry_dir_name("sm90_fp8_gemm_1d2d", "0123"), "kernel.sm90_fp8_gemm_1d2d.0123");
    EXPECT_EQ(entry_dir_name("../evil name;x", "k"), "kernel.___evil_name_x.k");
    EXPECT_EQ(entry_dir_name("", "k"), "kernel.unnamed.k");
}

TEST(CacheKey, FlagsHaveNoAbsolutePaths) {
    dg_test::ScopedEnv env;
    dg_test::clear_dg_env(env);
    env.set("DG_JIT_PTXAS_CHECK", "1").set("DG_JIT_WITH_LINEINFO", "1");
    const auto nvcc = make_nvcc_compiler(DG_TEST_NVCC);
    for (const auto* c : {nvcc.get()}) {
        for (const std::string& flag : c->flags("sm_90a", settings())) {
            EXPECT_EQ(flag.find('/'), std::string::npos) << flag;
        }
    }
    const auto flags = nvcc->flags("sm_90a", settings());
    EXPECT_NE(std::find(flags.begin(), flags.end(), "-gencode=arch=compute_90a,code=sm_90a"), flags.end());
    EXPECT_NE(std::find(flags.begin(), flags.end(), "-lineinfo"), flags.end());
    EXPECT_NE(std::find(flags.begin(), flags.end(), "-Xptxas"), flags.end());
    EXPECT_NE(std::find(flags.begin(), flags.end(), "--expt-relaxed-constexpr"), flags.end());
    EXPECT_NE(std::find(flags.begin(), flags.end(), "-O3"), flags.end());
    EXPECT_NE(std::find(flags.begin(), flags.end(), "-std=c++20"), flags.end());
    const auto nvrtc = make_nvrtc_compiler();
    for (const std::string& flag : nvrtc->flags("sm_90a", settings())) EXPECT_EQ(flag.find('/'), std::string::npos) << flag;
    EXPECT_THROW(nvcc->flags("sm90", settings()), ConfigError);
    EXPECT_THROW(nvcc->flags("sm_9x", settings()), ConfigError);
}

TEST(Manifest, RoundTripAndRejectsDamage) {
    Manifest m;
    m.format = kManifestVersion;
    m.name = "k";
    m.key = "abc";
    m.arch = "sm_90a";
    m.compiler = "nvcc release 13.0";
    m.flags = "-cubin -O3";
    m.cubin_size = 1234;
    m.cubin_sha256 = sha256_hex("x");
    const std::string text = format_manifest(m);
    const auto parsed = parse_manifest(text);
    ASSERT_TRUE(parsed.has_value());
    EXPECT_EQ(parsed->cubin_size, 1234);
    EXPECT_EQ(parsed->cubin_sha256, m.cubin_sha256);
    EXPECT_EQ(parsed->flags, m.flags);
    EXPECT_FALSE(parse_manifest(text.substr(0, text.size() - 3)).has_value()) << "truncated";
    EXPECT_FALSE(parse_manifest("").has_value());
    EXPECT_FALSE(parse_manifest("garbage\nend\n").has_value());
    std::string other_version = text;
    other_version.replace(other_version.find(" 1\n"), 3, " 9\n");
    EXPECT_FALSE(parse_manifest(other_version).has_value());
}
