// Renderings of the GEMM op table (gemm_table.hpp): Python signatures and torch.library schemas.
#include "python/gemm_table.hpp"

#include <fmt/format.h>

namespace deep_gemm::python {

namespace {

const char* schema_type(ArgKind kind) {
    switch (kind) {
        case ArgKind::kOperand:  // rendered as two tensors by torch_schema
        case ArgKind::kTensor: return "Tensor";
        case ArgKind::kOutTensor: return "Tensor(a!)";
        case ArgKind::kOptTensor: return "Tensor?";
        case ArgKind::kOptOutTensor: return "Tensor(b!)?";
        case ArgKind::kInt: return "int";
        case ArgKind::kOptInt: return "int?";
        case ArgKind::kBool: return "bool";
        case ArgKind::kStr: return "str";
        case ArgKind::kIntList: return "int[]";
        case ArgKind::kRecipe: return "int[]?";
        case ArgKind::kHalfRecipe: break;
    }
    return nullptr;
}

// The default in the schema language: "nk" in double quotes, int lists in brackets.
std::string schema_default(const OpArg& arg) {
    if (arg.kind == ArgKind::kStr) return fmt::format("\"{}\"", arg.default_value);
    if (arg.kind == ArgKind::kIntList) return fmt::format("[{}]", arg.default_value);
    return arg.default_value;
}

}  // namespace

std::string python_default(const OpArg& arg) {
    if (arg.default_value == nullptr) return "";
    if (arg.kind == ArgKind::kStr) return fmt::format("'{}'", arg.default_value);
    if (arg.kind == ArgKind::kIntList) return fmt::format("({})", arg.default_value);
    return arg.default_value;
}

std::string python_signature(const OpRow& row) {
    std::string out = "(";
    for (const OpArg& arg : row.args) {
        if (out.size() > 1) out += ", ";
        out += arg.name;
        if (arg.default_value != nullptr) out += "=" + python_default(arg);
    }
    return out + ")";
}

std::string torch_schema(const OpRow& row) {
    std::string params;
    for (const OpArg& arg : row.args) {
        if (arg.kind == ArgKind::kHalfRecipe) continue;
        if (not params.empty()) params += ", ";
        if (arg.kind == ArgKind::kOperand)
            params += fmt::format("Tensor {0}, Tensor sf{0}", arg.name);  // the pair's tensor and its scales
        else
            params += fmt::format("{} {}", schema_type(arg.kind), arg.name);
        if (arg.default_value != nullptr) params += "=" + schema_default(arg);
    }
    return fmt::format("{}({}) -> ()", api::gemm_op_spec(row.op).name, params);
}

size_t schema_arg_count(const OpRow& row) {
    size_t n = 0;
    for (const OpArg& arg : row.args) n += arg.kind == ArgKind::kOperand ? 2 : arg.kind == ArgKind::kHalfRecipe ? 0 : 1;
    return n;
}

}  // namespace deep_gemm::python
