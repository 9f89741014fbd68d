#include "include_scan.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sys/stat.h>
#include <unordered_map>

#include "files.hpp"
#include "sha256.hpp"

namespace deep_gemm::jit::detail {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

// A header as last read, valid while its stat matches.
struct HeaderFile {
    dev_t dev = 0;
    ino_t ino = 0;
    off_t size = 0;
    long long mtime_ns = 0;
    std::string content, digest;
    std::vector<std::string> includes;
};

long long mtime_ns(const struct stat& st) { return (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec; }

std::mutex g_header_mutex;
// Absolute path -> the file as last read. Entries are immutable: a changed file gets a new one, so a scan may
// keep using the one it got while another thread replaces it.
std::unordered_map<std::string, std::shared_ptr<const HeaderFile>> g_headers;

// The header at `path` (a regular file, stat `st`): from the memo while unchanged, else read, hashed and
// parsed again. Null when it cannot be read.
std::shared_ptr<const HeaderFile> header_file(const std::filesystem::path& path, const struct stat& st) {
    const std::string key = path.string();
    {
        std::lock_guard<std::mutex> lock(g_header_mutex);
        const auto it = g_headers.find(key);
        if (it != g_headers.end()) {
            const HeaderFile& e = *it->second;
            if (e.dev == st.st_dev && e.ino == st.st_ino && e.size == st.st_size && e.mtime_ns == mtime_ns(st))
                return it->second;
        }
    }
    std::optional<std::string> content = read_file(path);
    if (!content) return nullptr;
    auto entry = std::make_shared<HeaderFile>();
    entry->dev = st.st_dev, entry->ino = st.st_ino, entry->size = st.st_size, entry->mtime_ns = mtime_ns(st);
    entry->digest = sha256_hex(*content);
    entry->includes = parse_include_lines(*content);
    entry->content = std::move(*content);
    std::lock_guard<std::mutex> lock(g_header_mutex);
    g_headers[key] = entry;
    return entry;
}

// `path` normalized and expressed relative to `root`, or empty if it lies outside.
std::string relative_to_root(const std::filesystem::path& path, const std::filesystem::path& root) {
    const std::filesystem::path rel = path.lexically_normal().lexically_relative(root);
    if (rel.empty()) return {};
    const std::string text = rel.generic_string();
    if (text == ".." || text.rfind("../", 0) == 0) return {};
    return text;
}

}  // namespace

std::vector<std::string> parse_include_lines(const std::string& text) {
    std::vector<std::string> targets;
    std::size_t pos = 0;
    while (pos < text.size()) {
        std::size_t end = text.find('\n', pos);
        if (end == std::string::npos) end = text.size();
        std::size_t i = pos;
        while (i < end && is_space(text[i])) ++i;
        if (i < end && text[i] == '#') {
            ++i;
            while (i < end && is_space(text[i])) ++i;
            static constexpr char kInclude[] = "include";
            if (text.compare(i, sizeof(kInclude) - 1, kInclude) == 0) {
                i += sizeof(kInclude) - 1;
                while (i < end && is_space(text[i])) ++i;
                if (i < end && (text[i] == '<' || text[i] == '"')) {
                    const char close = text[i] == '<' ? '>' : '"';
                    const std::size_t stop = text.find(close, i + 1);
                    if (stop != std::string::npos && stop < end) {
                        // Keep the delimiter kind: '<' or '"' followed by the path.
                        targets.push_back(text[i] + text.substr(i + 1, stop - i - 1));
                    }
                }
            }
        }
        pos = end + 1;
    }
    return targets;
}

std::vector<IncludedHeader> scan_includes(const std::string& source, const std::filesystem::path& include_root,
                                          std::vector<std::string>* outside) {
    const std::filesystem::path root = include_root.lexically_normal();
    std::map<std::string, IncludedHeader> found;  // relative path -> header
    std::set<std::string> not_found;
    // Work list of (the include lines of a file, its directory relative to root or empty for the source).
    std::vector<std::pair<std::vector<std::string>, std::filesystem::path>> pending;
    pending.emplace_back(parse_include_lines(source), std::filesystem::path());
    while (!pending.empty()) {
        auto [targets, dir] = std::move(pending.back());
        pending.pop_back();
        for (const std::string& target : targets) {
            const bool quoted = target[0] == '"';
            const std::string name = target.substr(1);
            std::vector<std::filesystem::path> candidates;
            if (quoted && !dir.empty()) candidates.push_back(root / dir / name);
            candidates.push_back(root / name);
            bool resolved = false;
            for (const auto& candidate : candidates) {
                struct stat st;
                if (::stat(candidate.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
                const std::string rel = relative_to_root(candidate, root);
                if (rel.empty()) break;  // escapes the root: counts as outside
                resolved = true;
                if (found.count(rel) == 0) {
                    const std::shared_ptr<const HeaderFile> file = header_file(candidate, st);
                    if (file == nullptr) break;
                    found.emplace(rel, IncludedHeader{rel, file->content, file->digest});
                    pending.emplace_back(file->includes, std::filesystem::path(rel).parent_path());
                }
                break;
            }
            if (!resolved) not_found.insert(name);
        }
    }
    if (outside != nullptr) outside->assign(not_found.begin(), not_found.end());
    std::vector<IncludedHeader> headers;
    headers.reserve(found.size());
    for (auto& [rel, header] : found) headers.push_back(std::move(header));
    return headers;
}

}  // namespace deep_gemm::jit::detail
