// The tuning table of a kernel cache (see tuning_table.hpp and docs/cache.md).
#include "tuning_table.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <utility>

#include "cache.hpp"
#include "cache_lock.hpp"
#include "cache_trust.hpp"
#include "errors.hpp"
#include "files.hpp"
#include "log.hpp"
#include "settings.hpp"
#include "sha256.hpp"

namespace deep_gemm::jit {

namespace {

constexpr std::string_view kHeader = "deep_gemm tuning table 1";

std::vector<std::string_view> split(std::string_view text, char separator) {
    std::vector<std::string_view> parts;
    while (true) {
        const size_t at = text.find(separator);
        parts.push_back(text.substr(0, at));
        if (at == std::string_view::npos) return parts;
        text.remove_prefix(at + 1);
    }
}

std::optional<double> parse_us(std::string_view field) {
    const std::string text(field);
    char* end = nullptr;
    errno = 0;
    const double value = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() || errno != 0 || !(value >= 0) || value > 1e12) return std::nullopt;
    return value;
}

std::string format_us(double us) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.3f", us);
    return buffer;
}

// Empty when the table file may be trusted: a regular file (not a symlink) of the user's (or root's), that no
// other user may write (the group only for a group-shared cache).
std::string untrusted_file_reason(const std::filesystem::path& path, const detail::TrustPolicy& policy) {
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0) return "cannot examine " + path.string() + ": " + std::strerror(errno);
    if (!S_ISREG(st.st_mode)) return path.string() + " is not a regular file";
    if (st.st_uid != ::geteuid() && st.st_uid != 0 && !policy.group)
        return path.string() + " belongs to uid " + std::to_string(st.st_uid) + ", not to this user";
    if (st.st_mode & S_IWOTH) return path.string() + " can be written by any user";
    if ((st.st_mode & S_IWGRP) && !policy.group) return path.string() + " can be written by its group";
    return "";
}

// The table of `root` when the root and tuning/ are trusted (ConfigError otherwise); nullopt when absent.
std::optional<std::vector<TuningEntry>> read_if_present(const std::filesystem::path& root) {
    const detail::TrustPolicy policy = detail::trust_policy();
    const std::string origin = detail::root_origin(root);
    if (!detail::check_trusted_if_present(root, true, policy, origin)) return std::nullopt;
    if (!detail::check_trusted_if_present(root / "tuning", false, policy, origin)) return std::nullopt;
    const std::filesystem::path path = tuning_table_path(root);
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0 && errno == ENOENT) return std::nullopt;
    if (const std::string why = untrusted_file_reason(path, policy); !why.empty())
        throw ConfigError("the tuning table cannot be trusted: " + why + " (docs/cache.md)");
    const std::optional<std::string> text = detail::read_file(path, /*follow_symlinks=*/false);
    if (!text) throw Error("cannot read the tuning table " + path.string());
    try {
        return parse_tuning_table(*text);
    } catch (const Error& e) {
        throw Error("the tuning table " + path.string() + " is damaged: " + e.what() +
                    " (remove it, then tune again)");
    }
}

}  // namespace

std::string gpu_model(int sm_count, int clock_mhz) {
    return "sm" + std::to_string(sm_count) + "-" + std::to_string(clock_mhz / 100 * 100) + "mhz";
}

std::filesystem::path tuning_table_path(const std::filesystem::path& root) { return root / "tuning" / "table"; }

std::string format_tuning_table(const std::vector<TuningEntry>& entries) {
    std::string body = std::string(kHeader) + "\n";
    for (const TuningEntry& e : entries) {
        for (const std::string* field : {&e.gpu, &e.variable, &e.signature, &e.config})
            if (field->empty() || field->find_first_of("\t\n") != std::string::npos)
                throw Error("tuning table: an entry field is empty or has a tab or newline: '" + *field + "'");
        body += e.gpu + "\t" + e.variable + "\t" + e.signature + "\t" + e.config + "\t" + format_us(e.heuristic_us) +
                "\t" + format_us(e.tuned_us) + "\n";
    }
    return body + "end " + std::to_string(entries.size()) + " " + detail::sha256_hex(body) + "\n";
}

std::vector<TuningEntry> parse_tuning_table(std::string_view text) {
    if (text.empty() || text.back() != '\n') throw Error("it does not end with a complete line");
    const size_t end_line = text.rfind('\n', text.size() - 2);
    if (end_line == std::string_view::npos) throw Error("it has no end line");
    const std::string_view body = text.substr(0, end_line + 1);
    const std::vector<std::string_view> end = split(text.substr(end_line + 1, text.size() - end_line - 2), ' ');
    if (end.size() != 3 || end[0] != "end") throw Error("its last line is not 'end <count> <sha256>'");
    if (end[2] != detail::sha256_hex(body)) throw Error("its checksum does not match");
    std::vector<std::string_view> lines = split(body.substr(0, body.size() - 1), '\n');
    if (lines.front() != kHeader) throw Error("its first line is not '" + std::string(kHeader) + "'");
    std::vector<TuningEntry> entries;
    for (size_t i = 1; i < lines.size(); ++i) {
        const std::vector<std::string_view> f = split(lines[i], '\t');
        const std::optional<double> heuristic = f.size() == 6 ? parse_us(f[4]) : std::nullopt;
        const std::optional<double> tuned = f.size() == 6 ? parse_us(f[5]) : std::nullopt;
        if (!heuristic || !tuned || f[0].empty() || f[1].empty() || f[2].empty() || f[3].empty())
            throw Error("line " + std::to_string(i + 1) + " is not 'gpu, variable, signature, config, heuristic us, tuned us'");
        entries.push_back({std::string(f[0]), std::string(f[1]), std::string(f[2]), std::string(f[3]), *heuristic, *tuned});
    }
    if (end[1] != std::to_string(entries.size())) throw Error("its end line counts another number of entries");
    return entries;
}

std::vector<TuningEntry> read_tuning_table(const std::filesystem::path& root) {
    return read_if_present(root).value_or(std::vector<TuningEntry>{});
}

void merge_tuning_entries(const std::filesystem::path& root, const std::vector<TuningEntry>& entries) {
    format_tuning_table(entries);  // rejects bad fields before anything is written
    const detail::TrustPolicy policy = detail::trust_policy();
    detail::ensure_cache_dirs(root);
    const std::filesystem::path dir = root / "tuning";
    detail::make_trusted_dir(dir, false, policy, detail::root_origin(root));
    const detail::FileLock lock(dir / "table.lock");
    std::vector<TuningEntry> merged = read_tuning_table(root);
    for (const TuningEntry& e : entries) {
        const auto same = [&](const TuningEntry& old) {
            return std::tie(old.gpu, old.variable, old.signature) == std::tie(e.gpu, e.variable, e.signature);
        };
        std::erase_if(merged, same);
        merged.push_back(e);
    }
    const std::filesystem::path tmp = dir / ("table.tmp." + std::to_string(::getpid()));
    detail::write_file_durable(tmp, format_tuning_table(merged));
    ::chmod(tmp.c_str(), policy.group ? 0660 : 0600);
    std::error_code ec;
    std::filesystem::rename(tmp, tuning_table_path(root), ec);
    if (ec) {
        std::filesystem::remove(tmp, ec);
        throw Error("cannot publish the tuning table in " + dir.string());
    }
    detail::fsync_dir(dir);
}

std::optional<std::string> tuned_config(const std::string& gpu, std::string_view variable, std::string_view signature) {
    static std::mutex mutex;
    static const Settings* loaded_for = nullptr;
    static std::map<std::tuple<std::string, std::string, std::string>, std::string> picks;
    const Settings& settings = jit::settings();
    std::lock_guard<std::mutex> lock(mutex);
    if (loaded_for != &settings) {
        picks.clear();
        loaded_for = &settings;
        if (settings.use_tuning) {
            try {
                for (TuningEntry& e : read_tuning_table(settings.cache_dir))
                    picks[{std::move(e.gpu), std::move(e.variable), std::move(e.signature)}] = std::move(e.config);
            } catch (const Error& e) {
                log(LogLevel::kWarning, std::string("tuning table ignored: ") + e.what());
            }
        }
    }
    const auto it = picks.find({gpu, std::string(variable), std::string(signature)});
    if (it == picks.end()) return std::nullopt;
    return it->second;
}

}  // namespace deep_gemm::jit
