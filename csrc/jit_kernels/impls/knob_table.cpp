// The generic parser, help text, formatting, symbol suffixes and candidate enumeration of a kernel's knob table.
#include "knob_table.hpp"

#include <algorithm>
#include <optional>

#include "../../jit/errors.hpp"
#include "config_fields.hpp"

namespace deep_gemm::kernels::knobs {

namespace {

std::string range_text(const Range& r) {
    if ((r.hi - r.lo) / r.step < 4) {  // up to four values: listed
        std::string text = std::to_string(r.lo);
        for (int v = r.lo + r.step; v <= r.hi; v += r.step) text += ", " + std::to_string(v);
        return text;
    }
    std::string text = std::to_string(r.lo) + ".." + std::to_string(r.hi);
    return r.step == 1 ? text : text + " (step " + std::to_string(r.step) + ")";
}

std::string legal_text(const Knob& knob) {
    std::string text;
    for (const Range& r : knob.legal) text += (text.empty() ? "" : ", ") + range_text(r);
    return text;
}

// "block_m,block_n,stages[,pipelined[,...]]"
std::string form_text(const KnobTable& table) {
    std::string text, closing;
    for (size_t i = 0; i < table.knobs.size(); ++i) {
        if (i >= table.required) text += "[", closing += "]";
        text += (i == 0 ? "" : ",") + std::string(table.knobs[i].name);
    }
    return "\"" + text + closing + "\"";
}

[[noreturn]] void reject(const KnobTable& table, std::string_view text, const std::string& problem, const char* op) {
    throw jit::ConfigError((op != nullptr ? std::string(op) + ": " : std::string()) + table.variable + "='" + std::string(text) + "': " + problem + "; " +
                           help_text(table));
}

}  // namespace

Knob block_m_64_128_knob() {
    return {.name = "block_m", .field = &heuristics::Sm90GemmConfig::block_m, .legal = {{64, 128, 64}},
            .meaning = "tile rows", .tune = {64, 128}, .template_arg = "BLOCK_M"};
}

Knob block_n_knob(int max_block_n) {
    std::vector<int> tune;
    for (int v = 16; v <= max_block_n; v += 16) tune.push_back(v);
    return {.name = "block_n", .field = &heuristics::Sm90GemmConfig::block_n, .legal = {{16, max_block_n, 16}},
            .meaning = "tile columns", .tune = tune, .template_arg = "BLOCK_N"};
}

Knob stages_knob(int min_stages, int max_stages) {
    return {.name = "stages", .field = &heuristics::Sm90GemmConfig::num_stages, .legal = {{0, 0}, {min_stages, max_stages}},
            .meaning = "pipeline stages, 0 = as many as fit in shared memory", .template_arg = "kNumStages"};
}

bool Knob::accepts(int value) const {
    return std::any_of(legal.begin(), legal.end(), [&](const Range& r) {
        return value >= r.lo && value <= r.hi && (value - r.lo) % r.step == 0;
    });
}

std::string help_text(const KnobTable& table) {
    std::string text = "expected " + form_text(table);
    for (const char* word : table.words) text += std::string(", \"") + word + "\"";
    text += " or blank (no override):";
    for (const Knob& knob : table.knobs)
        text += std::string(" ") + knob.name + " " + legal_text(knob) + " (" + knob.meaning + ");";
    text.back() = '.';
    return text;
}

Forced parse_forced(const KnobTable& table, std::string_view text, const char* op) {
    Forced forced;
    const std::string_view body = config_fields::trim_blanks(text);
    if (body.empty()) return forced;
    for (size_t i = 0; i < table.words.size(); ++i)
        if (body == table.words[i]) {
            forced.state = int32_t(2 + i);
            return forced;
        }
    const std::vector<std::string_view> fields = config_fields::split_commas(body);
    const size_t n = table.knobs.size();
    if (fields.size() < table.required || fields.size() > n) {
        const bool other_separator = std::any_of(fields.begin(), fields.end(), [](std::string_view f) {
            return f.find_first_of(";: \t") != std::string_view::npos;
        });
        reject(table, text,
               std::to_string(fields.size()) + " comma-separated field" + (fields.size() == 1 ? "" : "s") + " instead of " +
                   std::to_string(table.required) + (n == table.required + 1 ? " or " : " to ") + std::to_string(n) +
                   (other_separator ? " (fields are separated by ',')" : ""), op);
    }
    for (size_t i = 0; i < n; ++i) {
        const Knob& knob = table.knobs[i];
        if (i >= fields.size()) {
            forced.values[i] = knob.absent;
            continue;
        }
        const std::optional<int> value = config_fields::parse_unsigned(fields[i]);
        if (!value) reject(table, text, std::string(knob.name) + " '" + std::string(fields[i]) + "' is not a non-negative integer", op);
        if (!knob.accepts(*value))
            reject(table, text, std::string(knob.name) + " " + std::to_string(*value) + " is not one of " + legal_text(knob), op);
        forced.values[i] = *value;
    }
    forced.state = 1;
    if (table.rule != nullptr)
        if (const char* broken = table.rule(apply_forced(table, forced, heuristics::Sm90GemmConfig{})))
            reject(table, text, broken, op);
    return forced;
}

heuristics::Sm90GemmConfig apply_forced(const KnobTable& table, const Forced& forced, heuristics::Sm90GemmConfig base) {
    if (!forced.active()) return base;
    for (size_t i = 0; i < table.knobs.size(); ++i) {
        const Knob& knob = table.knobs[i];
        if (forced.values[i] != knob.keep) base.*knob.field = forced.values[i] + knob.offset;
    }
    return base;
}

std::string format_config(const KnobTable& table, const heuristics::Sm90GemmConfig& config) {
    // Trailing optional knobs at their absent value are left out.
    size_t n = table.knobs.size();
    while (n > table.required && config.*table.knobs[n - 1].field - table.knobs[n - 1].offset == table.knobs[n - 1].absent) --n;
    std::string text;
    for (size_t i = 0; i < n; ++i)
        text += (i == 0 ? "" : ",") + std::to_string(config.*table.knobs[i].field - table.knobs[i].offset);
    return text;
}

std::string symbol_suffix(const KnobTable& table, const GemmKernelKey& key) {
    std::string text;
    for (const Knob& knob : table.knobs)
        if (knob.suffix != nullptr) text += knob.suffix(key);
    return text;
}

std::vector<heuristics::Sm90GemmConfig> candidates(const KnobTable& table, const heuristics::Sm90GemmConfig& pick,
                                                   int max_changed) {
    // Per knob, the values tried: the pick's first, then every tune value of a short list (a choice among a few
    // modes, or a pick at the "absent" value) or else the nearest tune values below and above it.
    std::vector<std::vector<int>> choices;
    for (const Knob& knob : table.knobs) {
        const int own = pick.*knob.field - knob.offset;
        std::vector<int> values{own};
        if (knob.tune.size() <= 3 || !knob.accepts(own)) {
            for (int v : knob.tune)
                if (v != own) values.push_back(v);
        } else {
            const auto above = std::upper_bound(knob.tune.begin(), knob.tune.end(), own);
            const auto at_or_above = std::lower_bound(knob.tune.begin(), knob.tune.end(), own);
            if (at_or_above != knob.tune.begin()) values.push_back(*(at_or_above - 1));
            if (above != knob.tune.end()) values.push_back(*above);
        }
        choices.push_back(values);
    }
    std::vector<heuristics::Sm90GemmConfig> out;
    std::vector<size_t> at(choices.size(), 0);  // odometer over the choices
    while (true) {
        int changed = 0;
        heuristics::Sm90GemmConfig config = pick;
        for (size_t i = 0; i < choices.size(); ++i) {
            changed += at[i] != 0;
            config.*table.knobs[i].field = choices[i][at[i]] + table.knobs[i].offset;
        }
        if (changed <= max_changed && (table.rule == nullptr || table.rule(config) == nullptr) &&
            std::find(out.begin(), out.end(), config) == out.end())
            out.push_back(config);
        size_t i = 0;
        while (i < at.size() && ++at[i] == choices[i].size()) at[i++] = 0;
        if (i == at.size()) return out;
    }
}

}  // namespace deep_gemm::kernels::knobs
