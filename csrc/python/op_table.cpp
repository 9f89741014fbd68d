// Renderings of the op table (op_table.hpp): the torch.library schema and the fast entry's Python signature.
#include "python/op_table.hpp"

#include <fmt/format.h>

namespace deep_gemm::python {

namespace {

const char* schema_type(ParamType type) {
    switch (type) {
        case ParamType::kTensor: return "Tensor";
        case ParamType::kMutTensorA: return "Tensor(a!)";
        case ParamType::kMutTensorB: return "Tensor(b!)";
        case ParamType::kOptTensor: return "Tensor?";
        case ParamType::kInt: return "int";
        case ParamType::kOptInt: return "int?";
        case ParamType::kSymInt: return "SymInt";
        case ParamType::kBool: return "bool";
        case ParamType::kFloat: return "float";
        case ParamType::kOptFloat: return "float?";
        case ParamType::kStr: return "str";
        case ParamType::kIntList: return "int[]";
        case ParamType::kScalarType: return "ScalarType";
    }
    return "";
}

const char* schema_returns(Returns returns) {
    switch (returns) {
        case Returns::kNothing: return "()";
        case Returns::kTensor: return "Tensor";
        case Returns::kThreeTensors: return "(Tensor, Tensor, Tensor)";
    }
    return "";
}

// The parameter list, each default rendered by `render`; `*` before the first keyword-only parameter.
template <class Render>
std::string param_list(const OpTableRow& row, bool with_types, const Render& render) {
    std::string out;
    bool keyword_only = false;
    for (const OpParam& p : row.params) {
        if (not out.empty()) out += ", ";
        if (p.keyword_only and not keyword_only) out += "*, ", keyword_only = true;
        out += with_types ? fmt::format("{} {}", schema_type(p.type), p.name) : p.name;
        if (p.default_value != nullptr) out += "=" + render(p);
    }
    return out;
}

}  // namespace

std::string schema_text(const OpTableRow& row) {
    const auto render = [](const OpParam& p) -> std::string {
        if (p.type == ParamType::kStr) return fmt::format("\"{}\"", p.default_value);
        if (p.type == ParamType::kIntList) return fmt::format("[{}]", p.default_value);
        return p.default_value;
    };
    return fmt::format("{}({}) -> {}", row.name, param_list(row, true, render), schema_returns(row.returns));
}

std::string python_signature(const OpTableRow& row) {
    const auto render = [](const OpParam& p) -> std::string {
        if (p.type == ParamType::kStr) return fmt::format("'{}'", p.default_value);
        if (p.type == ParamType::kIntList) return fmt::format("({})", p.default_value);
        return p.default_value;
    };
    return "(" + param_list(row, false, render) + ")";
}

}  // namespace deep_gemm::python
