#include "common.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace deep_gemm::api {

void throw_type_error(const std::string& message) { C10_THROW_ERROR(TypeError, message); }
void throw_value_error(const std::string& message) { C10_THROW_ERROR(ValueError, message); }
void throw_runtime_error(const std::string& message) { C10_THROW_ERROR(Error, message); }
void throw_not_implemented(const std::string& message) { C10_THROW_ERROR(NotImplementedError, message); }

std::string dtype_name(at::ScalarType dtype) {
    switch (dtype) {
        case at::kFloat: return "float32";
        case at::kDouble: return "float64";
        case at::kHalf: return "float16";
        case at::kBFloat16: return "bfloat16";
        case at::kFloat8_e4m3fn: return "float8_e4m3fn";
        case at::kFloat8_e5m2: return "float8_e5m2";
        case at::kFloat8_e4m3fnuz: return "float8_e4m3fnuz";
        case at::kFloat8_e5m2fnuz: return "float8_e5m2fnuz";
        case at::kFloat8_e8m0fnu: return "float8_e8m0fnu";
        case at::kInt: return "int32";
        case at::kLong: return "int64";
        case at::kShort: return "int16";
        case at::kChar: return "int8";
        case at::kByte: return "uint8";
        case at::kBool: return "bool";
        default: {
            std::string s = c10::toString(dtype);
            std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
            return s;
        }
    }
}

std::string device_name(const at::Tensor& t) { return t.device().str(); }

namespace {

std::string join(const int64_t* values, int n) {
    std::string s = "[";
    for (int i = 0; i < n; ++i) {
        if (i) s += ", ";
        s += known(values[i]) ? std::to_string(values[i]) : std::string("?");
    }
    return s + "]";
}

int64_t concrete_or_unknown(const c10::SymInt& s) {
    if (auto v = s.maybe_as_int()) return *v;
    return kUnknown;
}

}  // namespace

std::string View::shape_str() const { return join(size, dim); }
std::string View::stride_str() const { return join(stride, dim); }

View make_view(const at::Tensor& t, const char* name, bool transpose_last2) {
    View v;
    v.tensor = &t;
    v.name = name;
    v.dim = static_cast<int>(t.dim());
    if (v.dim > 4) throw_value_error(fmt::format("{}: tensors of more than 4 dims are not supported; got {}-D", name, v.dim));
    const auto* impl = t.unsafeGetTensorImpl();
    if (C10_UNLIKELY(t.layout() != c10::kStrided)) {
        // No strides to read (sparse, mkldnn): sizes only; Checker::strided rejects the tensor.
        for (int i = 0; i < v.dim; ++i) v.size[i] = t.sizes()[i], v.stride[i] = kUnknown;
    } else if (C10_LIKELY(not impl->has_symbolic_sizes_strides())) {
        const auto sizes = t.sizes();
        const auto strides = t.strides();
        for (int i = 0; i < v.dim; ++i) v.size[i] = sizes[i], v.stride[i] = strides[i];
    } else {
        const auto sizes = t.sym_sizes();
        const auto strides = t.sym_strides();
        for (int i = 0; i < v.dim; ++i) v.size[i] = concrete_or_unknown(sizes[i]), v.stride[i] = concrete_or_unknown(strides[i]);
    }
    if (transpose_last2 and v.dim >= 2) {
        std::swap(v.size[v.dim - 1], v.size[v.dim - 2]);
        std::swap(v.stride[v.dim - 1], v.stride[v.dim - 2]);
        v.transposed = true;
    }
    return v;
}

// ---- Checker --------------------------------------------------------------------------------------

void Checker::value_error(const std::string& what) const { throw_value_error(fmt::format("{}: {}", op_, what)); }
void Checker::type_error(const std::string& what) const { throw_type_error(fmt::format("{}: {}", op_, what)); }
void Checker::runtime_error(const std::string& what) const { throw_runtime_error(fmt::format("{}: {}", op_, what)); }
void Checker::not_implemented(const std::string& what) const { throw_not_implemented(fmt::format("{}: {}", op_, what)); }

void Checker::dtype_fail(const at::Tensor& t, const char* name, std::initializer_list<at::ScalarType> accepted) const {
    std::string expected;
    size_t i = 0;
    for (auto s : accepted) {
        if (i) expected += (i + 1 == accepted.size()) ? " or " : ", ";
        expected += dtype_name(s);
        ++i;
    }
    type_error(fmt::format("{} must have dtype {}; got {}", name, expected, dtype_name(t.scalar_type())));
}

void Checker::rank_fail(const View& v, int expected, const char* dims) const {
    value_error(fmt::format("{} must be a {}-D tensor {}; got {}-D with shape {}", v.name, expected, dims, v.dim, v.shape_str()));
}

void Checker::size_fail(const View& v, int i, int64_t expected, const char* what, const char* from) const {
    value_error(fmt::format("{}.shape[{}] ({}) must equal {} = {}; got {} (shape {})", v.name, i, what, from, expected,
                            v.size[i], v.shape_str()));
}

void Checker::int32_fail(int64_t value, const char* what) const {
    value_error(fmt::format("{} must be at most {} (the kernels take it as a 32-bit int); got {}", what, kMaxInt32, value));
}

void Checker::layout_fail(const at::Tensor& t, const char* name) const {
    const char* layout = "a non-strided layout";
    switch (t.layout()) {  // the Python names
        case c10::kSparse: layout = "torch.sparse_coo"; break;
        case c10::kSparseCsr: layout = "torch.sparse_csr"; break;
        case c10::kSparseCsc: layout = "torch.sparse_csc"; break;
        case c10::kSparseBsr: layout = "torch.sparse_bsr"; break;
        case c10::kSparseBsc: layout = "torch.sparse_bsc"; break;
        case c10::kMkldnn: layout = "torch._mkldnn"; break;
        case c10::kJagged: layout = "torch.jagged"; break;
        default: break;
    }
    value_error(fmt::format("{} must be a strided (dense) tensor; got layout {}", name, layout));
}

void Checker::value_positive(int64_t value, const char* name) const {
    if (known(value) and value <= 0) value_error(fmt::format("{} must be positive; got {}", name, value));
}

void Checker::tma_outer_stride(const View& v, int i, int64_t min_stride) const {
    const int64_t s = v.stride[i];
    if (not known(s) or v.size[i] <= 1 or v.empty()) return;
    const int64_t elem = static_cast<int64_t>(v.tensor->element_size());
    if ((s * elem) % 16 != 0)
        value_error(fmt::format("{} stride along dim {} must be a multiple of 16 bytes for TMA ({} elements of {}); "
                                "got strides {} (shape {}). Pad the row length or make the tensor contiguous with aligned rows",
                                v.name, i, 16 / elem, dtype_name(v.tensor->scalar_type()), v.stride_str(), v.shape_str()));
    if (known(min_stride) and s < min_stride)
        value_error(fmt::format("{} stride along dim {} must be at least {} (rows must not overlap); got strides {} (shape {})",
                                v.name, i, min_stride, v.stride_str(), v.shape_str()));
}

void Checker::tma_base(const View& v) const {
    if (v.empty()) return;
    const at::Tensor& t = *v.tensor;
    if (mode_ == CheckMode::kReal) {
        const auto addr = reinterpret_cast<uintptr_t>(t.const_data_ptr());
        if (addr % 16 != 0)
            value_error(fmt::format("{} data pointer must be 16-byte aligned for TMA; got address {:#x} (a slice with a "
                                    "misaligned offset?)", v.name, addr));
    } else {
        const auto offset = concrete_or_unknown(t.sym_storage_offset());
        if (known(offset) and (offset * static_cast<int64_t>(t.element_size())) % 16 != 0)
            value_error(fmt::format("{} must start 16-byte aligned for TMA; got a storage offset of {} elements", v.name, offset));
    }
}

void Checker::contiguous(const View& v, const char* why) const {
    if (v.empty()) return;
    int64_t expected = 1;
    for (int i = v.dim - 1; i >= 0; --i) {
        if (not known(v.size[i], v.stride[i]) or not known(expected)) return;
        if (v.size[i] != 1 and v.stride[i] != expected)
            value_error(fmt::format("{} must be contiguous{}; got shape {} with strides {}", v.name, why, v.shape_str(), v.stride_str()));
        expected *= v.size[i];
    }
}

int Checker::same_cuda_device(std::initializer_list<const View*> views) const {
    const View* first = nullptr;
    for (const View* v : views) {
        if (v == nullptr or not v->tensor->defined()) continue;
        const auto& dev = v->tensor->device();
        if (not dev.is_cuda())
            runtime_error(fmt::format("requires CUDA tensors; {} is on {}", v->name, device_name(*v->tensor)));
        if (first == nullptr) {
            first = v;
        } else if (dev.index() != first->tensor->device().index()) {
            runtime_error(fmt::format("all tensors must be on the same CUDA device; {} is on {} but {} is on {}", first->name,
                                      device_name(*first->tensor), v->name, device_name(*v->tensor)));
        }
    }
    return first ? first->tensor->device().index() : 0;
}

std::optional<std::pair<uintptr_t, uintptr_t>> byte_range(const View& v) {
    const at::Tensor& t = *v.tensor;
    if (not t.defined() or not t.has_storage()) return std::nullopt;
    const auto start = reinterpret_cast<uintptr_t>(t.const_data_ptr());
    int64_t last = 0;
    for (int i = 0; i < v.dim; ++i) {
        if (not known(v.size[i], v.stride[i])) return std::nullopt;
        if (v.size[i] == 0) return std::make_pair(start, start);
        last += (v.size[i] - 1) * v.stride[i];
    }
    return std::make_pair(start, start + static_cast<uintptr_t>((last + 1) * static_cast<int64_t>(t.element_size())));
}

void check_no_overlap(const Checker& check, const View& d, std::initializer_list<const View*> inputs) {
    if (check.mode() != CheckMode::kReal) return;
    const auto rd = byte_range(d);
    if (not rd or rd->first == rd->second) return;
    for (const View* v : inputs) {
        if (v == nullptr or not v->tensor->defined()) continue;
        const auto rv = byte_range(*v);
        if (not rv or rv->first == rv->second) continue;
        if (rd->first < rv->second and rv->first < rd->second)
            check.value_error(fmt::format("the output {} overlaps the input {} in memory; pass a separate output tensor", d.name, v->name));
    }
}

}  // namespace deep_gemm::api
