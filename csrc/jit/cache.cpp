// build(): key, in-process memo, on-disk cache with per-key flock and atomic directory rename.
#include "cache.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "cache_lock.hpp"
#include "cache_bundle.hpp"
#include "cache_settings.hpp"
#include "cache_trust.hpp"
#include "compiler.hpp"
#include "errors.hpp"
#include "files.hpp"
#include "jit.hpp"
#include "log.hpp"
#include "record.hpp"
#include "sha256.hpp"

namespace deep_gemm::jit {
namespace detail {
namespace {

std::string join(const std::vector<std::string>& items, char separator) {
    std::string out;
    for (const std::string& item : items) {
        if (!out.empty()) out.push_back(separator);
        out += item;
    }
    return out;
}

std::string errno_text(int err) { return std::strerror(err); }

// Removes the build directory unless it was moved into the cache.
struct TmpDir {
    std::filesystem::path path;
    bool released = false;
    ~TmpDir() {
        if (!released && !path.empty()) remove_tree(path);
    }
};

std::string unique_suffix() {
    static std::atomic<unsigned> counter{0};
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    return std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1)) + "." +
           std::to_string(std::chrono::duration_cast<std::chrono::microseconds>(now).count());
}

void quarantine(const std::filesystem::path& root, const std::filesystem::path& entry, const std::string& why) {
    const std::filesystem::path dir = root / "quarantine";
    make_trusted_dir(dir, /*is_root=*/false, trust_policy(), root_origin(root));
    const std::filesystem::path target = dir / (entry.filename().string() + "." + unique_suffix());
    std::string where;
    if (::rename(entry.c_str(), target.c_str()) == 0) {
        where = "moved it to " + target.string();
    } else {
        remove_tree(entry);
        where = "deleted it";
    }
    log(LogLevel::kWarning, "cache entry " + entry.string() + " is unusable (" + why + "); " + where + " and rebuilding");
}

// Build directories of processes that died mid-compile are removed once they are a day old (a live
// compile never takes that long; younger ones may belong to a running process). Only directories the cache
// made: a "build." name and the marker inside (tmp/ may be someone's ~/tmp when the root is $HOME).
// ensure_cache_dirs() has checked that tmp/ is a real directory of the user's, not a symlink.
void remove_stale_build_dirs(const std::filesystem::path& tmp_root) noexcept {
    std::error_code ec;
    const auto now = std::filesystem::file_time_type::clock::now();
    for (auto it = std::filesystem::directory_iterator(tmp_root, ec); !ec && it != std::filesystem::directory_iterator();
         it.increment(ec)) {
        if (it->path().filename().string().rfind("build.", 0) != 0 || !made_by_cache(it->path())) continue;
        std::error_code time_ec;
        const auto modified = it->symlink_status(time_ec).type() == std::filesystem::file_type::directory
                                  ? it->last_write_time(time_ec)
                                  : now;
        if (!time_ec && now - modified > std::chrono::hours(24)) remove_tree(it->path());
    }
}

// Report-only flags: they make the compiler print (the ptxas resource report) without changing the cubin,
// so the key leaves them out and DG_JIT_DEBUG / DG_JIT_PTXAS_VERBOSE reuse the entries made without them.
// (DG_JIT_PTXAS_CHECK, which can fail a compile, is in KeyInputs::options.)
std::vector<std::string> key_flags(const std::vector<std::string>& flags) {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < flags.size(); ++i) {
        if (flags[i] == "-Xptxas" && i + 1 < flags.size() && flags[i + 1] == "-v") {
            ++i;
            continue;
        }
        if (flags[i] == "--ptxas-options=--verbose") continue;
        out.push_back(flags[i]);
    }
    return out;
}

// Cache maintenance orders entries by last use, which is the entry directory's mtime: set by the rename
// that published it, refreshed here on every disk hit (once per process and kernel, the memo absorbs the
// rest). Best effort: a read-only shared cache simply keeps its publication times.
void mark_used(const std::filesystem::path& entry) noexcept { ::utimensat(AT_FDCWD, entry.c_str(), nullptr, 0); }

// In-process memo: a second build() of the same inputs reads no file.
std::mutex g_memo_mutex;
std::unordered_map<std::string, CachedKernel> g_memo;

std::mutex g_include_mutex;
std::atomic<const std::filesystem::path*> g_include_dir{nullptr};
std::vector<std::unique_ptr<std::filesystem::path>> g_include_dirs;  // kept alive for include_dir()'s reference

}  // namespace

std::string compute_key(const KeyInputs& in) {
    Sha256 h;
    // v2: headers enter through their content's digest (which scan_includes keeps per process), not the content.
    h.update_field("deep_gemm jit key v2");
    h.update_field(in.name);
    h.update_field(in.code);
    h.update_field(std::to_string(in.headers.size()));
    for (const IncludedHeader& header : in.headers) {
        h.update_field(header.relative_path);
        h.update_field(header.digest.empty() ? sha256_hex(header.content) : header.digest);
    }
    h.update_field(in.compiler_kind);
    h.update_field(in.compiler_version);
    h.update_field(std::to_string(in.flags.size()));
    for (const std::string& flag : in.flags) h.update_field(flag);
    h.update_field(in.arch);
    h.update_field(in.options);
    return h.hex_digest().substr(0, 32);
}

std::string entry_dir_name(const std::string& name, const std::string& key) {
    std::string safe;
    for (char c : name.substr(0, 64)) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
        safe.push_back(ok ? c : '_');
    }
    if (safe.empty()) safe = "unnamed";
    return "kernel." + safe + "." + key;
}

std::string format_manifest(const Manifest& m) {
    auto one_line = [](std::string text) {
        for (char& c : text) {
            if (c == '\n' || c == '\r') c = ' ';
        }
        return text;
    };
    std::string out = "deep_gemm-jit-manifest " + std::to_string(m.format) + "\n";
    out += "name " + one_line(m.name) + "\n";
    out += "key " + m.key + "\n";
    out += "arch " + one_line(m.arch) + "\n";
    out += "compiler " + one_line(m.compiler) + "\n";
    out += "flags " + one_line(m.flags) + "\n";
    out += "cubin_size " + std::to_string(m.cubin_size) + "\n";
    out += "cubin_sha256 " + m.cubin_sha256 + "\n";
    out += "end\n";
    return out;
}

std::optional<Manifest> parse_manifest(const std::string& text) {
    Manifest m;
    bool ended = false;
    std::size_t pos = 0;
    bool first = true;
    while (pos < text.size()) {
        std::size_t end = text.find('\n', pos);
        if (end == std::string::npos) return std::nullopt;  // every line, "end" included, ends with '\n'
        const std::string line = text.substr(pos, end - pos);
        pos = end + 1;
        const std::size_t space = line.find(' ');
        const std::string field = line.substr(0, space);
        const std::string value = space == std::string::npos ? std::string() : line.substr(space + 1);
        if (first) {
            if (field != "deep_gemm-jit-manifest") return std::nullopt;
            m.format = std::atoi(value.c_str());
            first = false;
        } else if (field == "name") {
            m.name = value;
        } else if (field == "key") {
            m.key = value;
        } else if (field == "arch") {
            m.arch = value;
        } else if (field == "compiler") {
            m.compiler = value;
        } else if (field == "flags") {
            m.flags = value;
        } else if (field == "cubin_size") {
            char* stop = nullptr;
            m.cubin_size = std::strtoll(value.c_str(), &stop, 10);
            if (value.empty() || *stop != '\0') return std::nullopt;
        } else if (field == "cubin_sha256") {
            m.cubin_sha256 = value;
        } else if (field == "end") {
            ended = true;
        }
    }
    if (!ended || m.format != kManifestVersion) return std::nullopt;
    return m;
}

std::optional<std::string> validate_entry(const std::filesystem::path& entry, const std::string& name,
                                          const std::string& key, const std::string& arch, std::string* why) {
    auto fail = [&](std::string reason) -> std::optional<std::string> {
        if (why) *why = std::move(reason);
        return std::nullopt;
    };
    struct stat st;
    if (::lstat(entry.c_str(), &st) != 0) return fail("no entry");
    if (!S_ISDIR(st.st_mode)) return fail("the entry is not a directory (a symlink?)");
    const std::optional<std::string> text = read_file(entry / "manifest", /*follow_symlinks=*/false);
    if (!text) return fail(errno == ENOENT ? "no manifest" : "cannot read its manifest: " + errno_text(errno));
    const std::optional<Manifest> m = parse_manifest(*text);
    if (!m) return fail("malformed or truncated manifest");
    if (m->key != key || m->arch != arch || m->name != name) return fail("manifest describes another kernel");
    std::optional<std::string> cubin = read_file(entry / "kernel.cubin", /*follow_symlinks=*/false);
    if (!cubin) return fail("no kernel.cubin");
    if (static_cast<long long>(cubin->size()) != m->cubin_size) {
        return fail("kernel.cubin has " + std::to_string(cubin->size()) + " bytes, the manifest says " +
                    std::to_string(m->cubin_size));
    }
    if (sha256_hex(*cubin) != m->cubin_sha256) return fail("kernel.cubin does not match its SHA-256");
    return cubin;
}

void ensure_cache_dirs(const std::filesystem::path& root) {
    const std::string origin = root_origin(root);
    const std::string fix = origin == "DG_JIT_CACHE_DIR" ? "; set DG_JIT_CACHE_DIR to a writable directory"
                                                         : "; correct that, or set DG_JIT_CACHE_DIR to a writable directory";
    const TrustPolicy policy = trust_policy();
    struct stat st;
    if (::lstat(root.c_str(), &st) != 0) {
        // The parents are not the cache's: created as any directory would be. The root itself is 0700.
        std::error_code ec;
        std::filesystem::create_directories(root.parent_path(), ec);
        if (ec) {
            throw ConfigError("cannot create the kernel cache dir " + root.string() + " (" + origin + "): " +
                              ec.message() + fix);
        }
    } else if (!S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode)) {
        throw ConfigError("the kernel cache dir " + root.string() + " (" + origin + ") is not a directory" + fix);
    }
    make_trusted_dir(root, /*is_root=*/true, policy, origin);
    if (::access(root.c_str(), W_OK | X_OK) != 0) {
        throw ConfigError("the kernel cache dir " + root.string() + " (" + origin + ") is not writable: " +
                          errno_text(errno) + fix);
    }
    for (const char* sub : {"cache", "tmp", "locks"}) {
        const std::filesystem::path dir = root / sub;
        make_trusted_dir(dir, /*is_root=*/false, policy, origin);
        if (::access(dir.c_str(), W_OK | X_OK) != 0) {
            throw ConfigError(dir.string() + " in the kernel cache dir (" + origin + ") is not writable: " +
                              errno_text(errno) + fix);
        }
    }
}

void clear_build_memo() {
    std::lock_guard<std::mutex> lock(g_memo_mutex);
    g_memo.clear();
}

}  // namespace detail

void set_include_dir(const std::filesystem::path& dir) {
    std::error_code ec;
    std::filesystem::path absolute = std::filesystem::absolute(dir, ec);
    auto stored = std::make_unique<std::filesystem::path>((ec ? dir : absolute).lexically_normal());
    std::lock_guard<std::mutex> lock(detail::g_include_mutex);
    detail::g_include_dir.store(stored.get(), std::memory_order_release);
    detail::g_include_dirs.push_back(std::move(stored));
}

const std::filesystem::path& include_dir() {
    const std::filesystem::path* dir = detail::g_include_dir.load(std::memory_order_acquire);
    if (dir == nullptr) {
        throw ConfigError("the JIT include dir is not set; call deep_gemm::jit::set_include_dir() with the "
                          "deep_gemm/include directory (the Python package does this when imported)");
    }
    return *dir;
}

namespace detail {
namespace {

// The key of `src` for `arch` under the current settings and compiler, and what build() needs besides.
struct Keyed {
    KeyInputs inputs;  // code and headers cleared once hashed
    std::string key, memo_key;
    bool trim_headers = false;
    std::filesystem::path entry;
};

std::string options_text(const Settings& s) {
    return std::string("ptxas_check=") + (s.ptxas_check ? "1" : "0") + ";dump_ptx=" + (s.dump_ptx ? "1" : "0") +
           ";dump_sass=" + (s.dump_sass ? "1" : "0");
}

std::string memo_key_of(const KernelSource& src, const std::string& arch, const Settings& s, const Compiler& c) {
    Sha256 memo_hash;
    for (const std::string& part : {s.cache_dir.string(), include_dir().string(), c.kind(), c.version(),
                                    join(c.flags(arch, s), '\x1f'), arch, options_text(s), src.name, src.code}) {
        memo_hash.update_field(part);
    }
    return memo_hash.hex_digest();
}

Keyed key_of(const KernelSource& src, const std::string& arch, const Settings& s, const Compiler& c) {
    const std::filesystem::path& inc = include_dir();
    Keyed k;
    k.inputs.name = src.name;
    k.inputs.compiler_kind = c.kind();
    k.inputs.compiler_version = c.version();
    k.inputs.arch = arch;
    k.inputs.options = options_text(s);
    struct stat st;
    if (::stat(inc.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
        throw ConfigError("the JIT include dir " + inc.string() + " is not a directory; call set_include_dir() with "
                          "the deep_gemm/include directory of the installed package");
    }
    k.inputs.code = src.code;
    std::vector<std::string> outside_headers;
    k.inputs.headers = scan_includes(src.code, inc, &outside_headers);
    // Trimmed CUDA headers only for kernels that include nothing but our own headers (a toolkit header may
    // need what the trimmed set leaves out). Decided by the source and headers, which the key covers.
    k.trim_headers = s.trim_headers && outside_headers.empty();
    k.inputs.flags = key_flags(c.flags(arch, s, k.trim_headers));
    k.key = compute_key(k.inputs);
    k.inputs.code.clear();
    k.inputs.headers.clear();
    k.entry = s.cache_dir / "cache" / entry_dir_name(src.name, k.key);
    return k;
}

// Reads the root and cache/ only after checking them (they may be absent: a cold cache). Throws
// ConfigError for an untrusted one.
bool cache_readable(const std::filesystem::path& root) {
    const TrustPolicy policy = trust_policy();
    const std::string origin = root_origin(root);
    return check_trusted_if_present(root, /*is_root=*/true, policy, origin) &&
           check_trusted_if_present(root / "cache", /*is_root=*/false, policy, origin);
}

std::mutex g_warned_mutex;
std::unordered_map<std::string, bool> g_warned_misses;

// DG_JIT_COMPILE=warn|error on a miss (the caller records the kernel first when DG_JIT_RECORD is set).
void check_compile_allowed(const KernelSource& src, const std::string& arch, const Settings& s, const Keyed& k) {
    if (cache_settings().compile_mode == CacheSettings::CompileMode::kCompile) return;
    const std::string how =
        s.record_path.empty()
            ? "record the job's kernels with DG_JIT_RECORD=FILE, then build them ahead with `python -m deep_gemm "
              "warmup FILE` (or `warmup --call 'op:m=..,n=..,k=..'`) into this cache"
            : "it was recorded in " + s.record_path.string() + ": `python -m deep_gemm warmup " +
                  s.record_path.string() + "` builds it into this cache";
    // The warm-up compiles, so it must not run under DG_JIT_COMPILE=error itself.
    const std::string unset = cache_settings().compile_mode == CacheSettings::CompileMode::kError
                                  ? " (run the warm-up without DG_JIT_COMPILE=error)"
                                  : "";
    const std::string what = "kernel " + src.name + " (" + arch + ", key " + k.key + ") is not in the kernel cache " +
                             s.cache_dir.string();
    if (cache_settings().compile_mode == CacheSettings::CompileMode::kError) {
        throw ConfigError("DG_JIT_COMPILE=error: " + what + "; " + how + unset);
    }
    {
        std::lock_guard<std::mutex> lock(g_warned_mutex);
        if (!g_warned_misses.emplace(k.key, true).second) return;
    }
    log(LogLevel::kWarning, "DG_JIT_COMPILE=warn: " + what + "; compiling it now. " + how);
}

}  // namespace
}  // namespace detail

CacheLookup lookup(const KernelSource& src, const std::string& arch) {
    using namespace detail;
    const Settings& s = settings();
    arch_number(arch);  // validates
    const Keyed k = key_of(src, arch, s, compiler());
    CacheLookup out;
    out.dir = k.entry;
    out.key = k.key;
    std::string why;
    out.present = cache_readable(s.cache_dir) && validate_entry(k.entry, src.name, k.key, arch, &why).has_value();
    return out;
}

CachedKernel build(const KernelSource& src, const std::string& arch) {
    using namespace detail;
    const Settings& s = settings();
    const Compiler& c = compiler();
    const std::filesystem::path& inc = include_dir();
    arch_number(arch);  // validates

    const std::string memo_key = memo_key_of(src, arch, s, c);
    {
        std::lock_guard<std::mutex> lock(g_memo_mutex);
        if (auto it = g_memo.find(memo_key); it != g_memo.end()) {
            CachedKernel hit = it->second;
            hit.compiled = false;
            return hit;
        }
    }

    const Keyed keyed = key_of(src, arch, s, c);
    const KeyInputs& inputs = keyed.inputs;
    const std::string& key = keyed.key;
    const bool trim_headers = keyed.trim_headers;
    const std::filesystem::path root = s.cache_dir;
    const std::filesystem::path& entry = keyed.entry;

    auto remember = [&](CachedKernel kernel) {
        if (!s.record_path.empty()) append_record(s.record_path, src, arch);  // DG_JIT_RECORD: first use here
        std::lock_guard<std::mutex> lock(g_memo_mutex);
        g_memo[memo_key] = kernel;
        return kernel;
    };

    // Look up before asking for write access: a complete cache on a read-only path serves hits.
    std::string why;
    if (cache_readable(root)) {
        if (auto cubin = validate_entry(entry, src.name, key, arch, &why)) {
            if (s.debug) log(LogLevel::kDebug, "cache hit for " + src.name + ": " + entry.string());
            mark_used(entry);
            return remember({entry, std::move(*cubin), false});
        }
    }
    if (cache_settings().compile_mode == CacheSettings::CompileMode::kError && !s.record_path.empty()) {
        append_record(s.record_path, src, arch);  // so that the warm-up the error names builds it
    }
    check_compile_allowed(src, arch, s, keyed);
    try {
        ensure_cache_dirs(root);
    } catch (const ConfigError& e) {
        const std::string state = why.empty() || why == "no entry"
                                      ? "is not in the kernel cache"
                                      : "has an unusable entry in the kernel cache (" + why + ": " + entry.string() + ")";
        throw ConfigError("kernel " + src.name + " (" + arch + ") " + state + ", and cannot be compiled into it: " +
                          e.what());
    }

    FileLock lock(key_lock_path(root, key));
    struct stat entry_stat;
    if (::stat(entry.c_str(), &entry_stat) == 0) {
        if (auto cubin = validate_entry(entry, src.name, key, arch, &why)) {
            if (s.debug) log(LogLevel::kDebug, "cache hit for " + src.name + " after waiting: " + entry.string());
            mark_used(entry);
            return remember({entry, std::move(*cubin), false});
        }
        quarantine(root, entry, why);
    } else if (s.debug) {
        log(LogLevel::kDebug, "cache miss for " + src.name + ": " + entry.string());
    }
    remove_stale_build_dirs(root / "tmp");

    // Compile into a private directory, then move it into place in one rename.
    // Named after the key: cache maintenance (cache_admin) tells an orphan from a live build by the key lock.
    std::string tmpl = (root / "tmp" / ("build." + key + ".XXXXXX")).string();
    if (::mkdtemp(tmpl.data()) == nullptr) {
        throw ConfigError("cannot create a build directory under " + (root / "tmp").string() + ": " +
                          errno_text(errno) + "; set DG_JIT_CACHE_DIR to a writable directory");
    }
    TmpDir tmp{tmpl};
    ::chmod(tmp.path.c_str(), cache_dir_mode(trust_policy()));
    write_marker(tmp.path);  // what cache maintenance may delete (cache_trust.hpp)

    log(LogLevel::kInfo, "compiling kernel " + src.name + " for " + arch + " with " + c.kind() + " (" + key + ")");
    const auto start = std::chrono::steady_clock::now();
    write_file_durable(tmp.path / "kernel.cu", src.code);
    CompileJob job{src.name, src.code, arch, inc, tmp.path, s.dump_ptx, s.dump_sass, trim_headers};
    std::string cubin = c.compile(job, s);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    Manifest manifest;
    manifest.format = kManifestVersion;
    manifest.name = src.name;
    manifest.key = key;
    manifest.arch = arch;
    manifest.compiler = c.kind() + " " + c.version();
    manifest.flags = join(inputs.flags, ' ');
    manifest.cubin_size = static_cast<long long>(cubin.size());
    manifest.cubin_sha256 = sha256_hex(cubin);
    // kernel.cubin was written by the compiler; rewrite it durably from the bytes we validated.
    write_file_durable(tmp.path / "kernel.cubin", cubin);
    for (const char* dump : {"kernel.ptx", "kernel.sass"}) {
        if (auto data = read_file(tmp.path / dump)) write_file_durable(tmp.path / dump, *data);
    }
    write_file_durable(tmp.path / "manifest", format_manifest(manifest));
    fsync_dir(tmp.path);

    if (::rename(tmp.path.c_str(), entry.c_str()) != 0) {
        const int err = errno;
        if (err == EEXIST || err == ENOTEMPTY) {
            // Another builder (one that did not take our lock) won; use its entry if it is sound.
            if (auto winner = validate_entry(entry, src.name, key, arch, &why)) {
                if (s.debug) log(LogLevel::kDebug, "lost the rename race for " + entry.string() + "; using the winner's");
                return remember({entry, std::move(*winner), true});
            }
        }
        throw ConfigError("cannot move the compiled kernel into " + entry.string() + ": " + errno_text(err) +
                          "; set DG_JIT_CACHE_DIR to a writable directory");
    }
    tmp.released = true;
    fsync_dir(root / "cache");
    log(LogLevel::kInfo, "compiled kernel " + src.name + " in " + std::to_string(seconds) + " s: " + entry.string());
    return remember({entry, std::move(cubin), true});
}

}  // namespace deep_gemm::jit
