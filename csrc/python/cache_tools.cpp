// Python views of jit/cache_admin.hpp and of the compiler choice (see cache_tools.hpp).
#include "python/cache_tools.hpp"

#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <optional>

#include "jit/cache_admin.hpp"
#include "jit/cache_bundle.hpp"
#include "jit/compiler.hpp"
#include "jit/errors.hpp"
#include "jit/jit.hpp"
#include "jit/settings.hpp"

namespace deep_gemm::python {

namespace py = pybind11;

namespace {

py::dict entry_dict(const jit::CacheEntryInfo& e) {
    py::dict d;
    d["path"] = e.path.string();
    d["name"] = e.name;
    d["key"] = e.key;
    d["arch"] = e.arch;
    d["compiler"] = e.compiler;
    d["manifest_ok"] = e.manifest_ok;
    d["bytes"] = e.bytes;
    d["created"] = e.created;
    d["last_used"] = e.last_used;
    return d;
}

py::list path_list(const std::vector<std::filesystem::path>& paths) {
    py::list out;
    for (const auto& path : paths) out.append(path.string());
    return out;
}

// The compiler settings() selects: kind, version, and for NVCC the executable. Never throws: a compiler
// that cannot be found is reported in "error" (info must work on a machine without CUDA).
py::dict compiler_info() {
    py::dict d;
    try {
        std::string kind, version, path;
        {
            py::gil_scoped_release no_gil;
            const jit::Settings& s = jit::settings();
            const jit::detail::Compiler& c = jit::detail::compiler();
            kind = c.kind();
            version = c.version();
            if (!s.use_nvrtc) path = jit::detail::resolve_nvcc(s).string();
        }
        d["kind"] = kind;
        d["version"] = version;
        d["path"] = path;
    } catch (const std::exception& e) {
        d["error"] = std::string(e.what());
    }
    return d;
}

}  // namespace

void register_cache_tools(py::module_& m) {
    m.def("cache_list", [](const std::filesystem::path& root) {
        std::vector<jit::CacheEntryInfo> entries;
        {
            py::gil_scoped_release no_gil;
            entries = jit::list_cache(root);
        }
        py::list out;
        for (const auto& e : entries) out.append(entry_dict(e));
        return out;
    }, py::arg("root"), "Entries of the kernel cache at `root`, most recently used first.");

    m.def("cache_stats", [](const std::filesystem::path& root) {
        jit::CacheStats s;
        {
            py::gil_scoped_release no_gil;
            s = jit::cache_stats(root);
        }
        py::dict d;
        d["entries"] = s.entries;
        d["entry_bytes"] = s.entry_bytes;
        d["build_dirs"] = s.build_dirs;
        d["build_bytes"] = s.build_bytes;
        d["quarantined"] = s.quarantined;
        d["quarantine_bytes"] = s.quarantine_bytes;
        d["lock_files"] = s.lock_files;
        return d;
    }, py::arg("root"));

    m.def("cache_prune", [](const std::filesystem::path& root, std::optional<std::int64_t> max_unused_seconds,
                            std::optional<std::int64_t> max_total_bytes, bool remove_all, bool dry_run) {
        jit::PruneOptions options;
        options.max_unused_seconds = max_unused_seconds;
        options.max_total_bytes = max_total_bytes;
        options.remove_all = remove_all;
        options.dry_run = dry_run;
        jit::PruneReport r;
        {
            py::gil_scoped_release no_gil;
            r = jit::prune_cache(root, options);
        }
        py::dict d;
        d["removed"] = path_list(r.removed);
        d["busy"] = path_list(r.busy);
        d["bytes_freed"] = r.bytes_freed;
        d["entries_left"] = r.entries_left;
        d["bytes_left"] = r.bytes_left;
        return d;
    }, py::arg("root"), py::arg("max_unused_seconds") = py::none(), py::arg("max_total_bytes") = py::none(),
       py::arg("remove_all") = false, py::arg("dry_run") = false,
       "Remove cache entries (unused for longer than max_unused_seconds, then least recently used beyond "
       "max_total_bytes, or all), skipping keys another process holds; also orphaned build dirs and the quarantine.");

    m.def("build_source", [](const std::string& name, const std::string& symbol, const std::string& code,
                             const std::string& arch) {
        jit::CachedKernel entry;
        {
            py::gil_scoped_release no_gil;  // warm-ups build on several threads
            entry = jit::build({name, symbol, code}, arch);
        }
        py::dict d;
        d["dir"] = entry.dir.string();
        d["compiled"] = entry.compiled;
        d["cubin_size"] = entry.cubin.size();
        return d;
    }, py::arg("name"), py::arg("symbol"), py::arg("code"), py::arg("arch"),
       "Build (or find in the cache) a generated kernel source for `arch`, as recorded by DG_JIT_RECORD.");

    m.def("cache_lookup", [](const std::string& name, const std::string& symbol, const std::string& code,
                             const std::string& arch) {
        jit::CacheLookup found;
        {
            py::gil_scoped_release no_gil;
            found = jit::lookup({name, symbol, code}, arch);
        }
        py::dict d;
        d["dir"] = found.dir.string();
        d["key"] = found.key;
        d["present"] = found.present;
        return d;
    }, py::arg("name"), py::arg("symbol"), py::arg("code"), py::arg("arch"),
       "Where the cache (DG_JIT_CACHE_DIR) would hold this kernel source and whether a valid entry is there; "
       "compiles and writes nothing.");

    m.def("cache_install_entry", [](const std::filesystem::path& root, const std::string& dir_name,
                                    const std::vector<std::pair<std::string, std::filesystem::path>>& files) {
        py::gil_scoped_release no_gil;
        return jit::install_entry(root, dir_name, files);
    }, py::arg("root"), py::arg("dir_name"), py::arg("files"),
       "Install one verified entry (list of (file name, path of a verified copy)) into the cache at `root`, "
       "atomically under the key lock; False when a valid entry was already there.");

    m.def("cache_prepare_dir", [](const std::filesystem::path& root, const std::string& name) {
        std::filesystem::path dir;
        {
            py::gil_scoped_release no_gil;
            dir = jit::prepare_side_dir(root, name);
        }
        return dir.string();
    }, py::arg("root"), py::arg("name"),
       "Create (if absent) and check <root>/<name> as the cache checks its own directories (docs/cache.md); "
       "raises RuntimeError for one that may not be trusted. For the legacy kernels' Triton cache.");

    m.def("compiler_info", &compiler_info, "The compiler the JIT would use: kind, version, path (or error).");
}

}  // namespace deep_gemm::python
