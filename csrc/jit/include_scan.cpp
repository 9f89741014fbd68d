#include "include_scan.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <sys/stat.h>

#include "files.hpp"

namespace deep_gemm::jit::detail {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

bool regular_file_exists(const std::filesystem::path& path) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
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
    std::map<std::string, std::string> found;  // relative path -> content
    std::set<std::string> not_found;
    // Work list of (text to scan, directory of that file relative to root or empty for the source).
    std::vector<std::pair<std::string, std::filesystem::path>> pending;
    pending.emplace_back(source, std::filesystem::path());
    while (!pending.empty()) {
        auto [text, dir] = std::move(pending.back());
        pending.pop_back();
        for (const std::string& target : parse_include_lines(text)) {
            const bool quoted = target[0] == '"';
            const std::string name = target.substr(1);
            std::vector<std::filesystem::path> candidates;
            if (quoted && !dir.empty()) candidates.push_back(root / dir / name);
            candidates.push_back(root / name);
            bool resolved = false;
            for (const auto& candidate : candidates) {
                if (!regular_file_exists(candidate)) continue;
                const std::string rel = relative_to_root(candidate, root);
                if (rel.empty()) break;  // escapes the root: counts as outside
                resolved = true;
                if (found.count(rel) == 0) {
                    std::optional<std::string> content = read_file(candidate);
                    if (!content) break;
                    found.emplace(rel, *content);
                    pending.emplace_back(std::move(*content), std::filesystem::path(rel).parent_path());
                }
                break;
            }
            if (!resolved) not_found.insert(name);
        }
    }
    if (outside != nullptr) outside->assign(not_found.begin(), not_found.end());
    std::vector<IncludedHeader> headers;
    headers.reserve(found.size());
    for (auto& [rel, content] : found) headers.push_back({rel, std::move(content)});
    return headers;
}

}  // namespace deep_gemm::jit::detail
