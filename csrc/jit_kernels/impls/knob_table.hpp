// The declared config knobs of an SM90 GEMM kernel (FP8 1D2D, FP8 1D1D, BF16): each knob once, with its legal
// values, its field in the kernel's forced-config variable (DG_*_GEMM_CONFIG: the knobs in table order,
// comma-separated), the field of the typed config (heuristics::Sm90GemmConfig) it sets, its kernel symbol suffix
// and the kernel template parameter it becomes. From a table come the one parser and help text of the
// variable (parse_forced, help_text), the text of a config in that syntax (format_config), the symbol
// suffixes (symbol_suffix) and the candidate configs around a pick (candidates). A kernel's table is
// declared in its host .cpp, next to its body template and finalize (kernel_key). Torch-free.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "../heuristics/common.hpp"
#include "sm90_gemm_desc.hpp"

namespace deep_gemm::kernels::knobs {

// Legal values lo, lo + step, ..., hi.
struct Range {
    int lo, hi, step = 1;
};

inline constexpr int kNone = -1;   // Knob::keep: no value keeps the heuristic's pick
inline constexpr int kMaxKnobs = 8;

struct Knob {
    const char* name;
    int heuristics::Sm90GemmConfig::* field;  // the typed config's field the knob sets
    std::vector<Range> legal;                 // the values the variable accepts
    const char* meaning;                      // the values' meaning, for the help text
    int absent = 0;     // the value an omitted (optional) field stands for
    int keep = kNone;   // the value that keeps the heuristic's pick of the field (e.g. group_n 0)
    int offset = 0;     // the config holds value + offset (BF16 multicast: 0 = the caller's request, 1 off, 2 on)
    std::vector<int> tune;  // the values the tuner steps through (ascending); empty: the knob is not tuned
    std::string (*suffix)(const GemmKernelKey&) = nullptr;  // kernel symbol suffix (nullptr: in gemm_symbol)
    const char* template_arg = "";  // the kernel template's parameter(s) the key field becomes

    bool accepts(int value) const;
};

// The knobs every kernel has: BLOCK_N (multiples of 16 up to `max_block_n`, all tuned) and the pipeline stages
// (0 = as many as fit, else [min_stages, max_stages]; not tuned: each candidate takes as many as fit); and the
// BLOCK_M of the kernels with one or two 64-row math warpgroups (64 or 128, both tuned: BF16, FP8 1D1D).
Knob block_m_64_128_knob();
Knob block_n_knob(int max_block_n);
Knob stages_knob(int min_stages, int max_stages);

// Cross-knob rules that do not depend on the problem (nullptr: the config is fine), shared by the parser,
// the candidate enumeration and the kernel's finalize.
using ConfigRule = const char* (*)(const heuristics::Sm90GemmConfig& config);

struct KnobTable {
    const char* variable;   // "DG_FP8_GEMM_CONFIG"
    size_t required;        // the leading knobs a value must give
    std::vector<Knob> knobs;
    std::vector<const char*> words;  // whole values with a meaning of their own ("rules", "legacy"), else none
    ConfigRule rule = nullptr;
};

// A parsed variable, compared and hashed bytewise (part of the config memo's query): `state` 0 = not set,
// 1 = the config in `values` (omitted fields at their `absent` value), 2 + i = the table's word i.
struct Forced {
    int32_t state = 0;
    int32_t values[kMaxKnobs] = {};
    bool active() const { return state == 1; }
    bool operator==(const Forced&) const = default;
};

// Parses a value of the table's variable; anything but blank, one of its words, or `required` to all knobs'
// comma-separated legal values obeying its rule raises jit::ConfigError naming the variable and the value,
// saying what is wrong and giving help_text (prefixed by "<op>: " when `op` is given).
Forced parse_forced(const KnobTable& table, std::string_view text, const char* op = nullptr);

// The accepted forms and every knob's legal values and meaning.
std::string help_text(const KnobTable& table);

// `base` with the forced knobs set (the knobs at their `keep` value leave it alone).
heuristics::Sm90GemmConfig apply_forced(const KnobTable& table, const Forced& forced, heuristics::Sm90GemmConfig base);

// A config in the variable's syntax (trailing optional knobs at their absent value left out), which
// parse_forced + apply_forced give back.
std::string format_config(const KnobTable& table, const heuristics::Sm90GemmConfig& config);

// The knobs' symbol suffixes of a key, in table order.
std::string symbol_suffix(const KnobTable& table, const GemmKernelKey& key);

// Candidate configs around `pick`: every tuned knob at its value in `pick` or another of its `tune` list (all of
// a list of at most three values, else the nearest below and above), at most `max_changed` knobs changed,
// obeying the table's rule; `pick` itself first. The problem-dependent rules are the kernel's finalize (kernel_key), which the caller
// applies by planning each candidate.
std::vector<heuristics::Sm90GemmConfig> candidates(const KnobTable& table, const heuristics::Sm90GemmConfig& pick,
                                                   int max_changed = 2);

}  // namespace deep_gemm::kernels::knobs
