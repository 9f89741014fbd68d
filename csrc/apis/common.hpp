// Shared helpers of the torch-facing layer: Python-mappable errors, readable dtype/device names, a
// light view of a tensor's shape/strides (with symbolic sizes as "unknown" so the same checks run on
// fake tensors under torch.compile), and the check primitives every op's validation is built from.
//
// Errors are c10 exception types so that they become the right Python exception whether an op is
// reached through our pybind11 fast path (python_api.cpp translates them) or through the torch
// dispatcher (torch translates them): c10::TypeError -> TypeError, c10::ValueError -> ValueError,
// c10::NotImplementedError -> NotImplementedError, c10::Error -> RuntimeError.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/impl/TorchDispatchModeTLS.h>
#include <c10/util/Exception.h>

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>

namespace deep_gemm::api {

// ---- errors ---------------------------------------------------------------------------------------

[[noreturn]] void throw_type_error(const std::string& message);
[[noreturn]] void throw_value_error(const std::string& message);
[[noreturn]] void throw_runtime_error(const std::string& message);
[[noreturn]] void throw_not_implemented(const std::string& message);

// Python-style names: "float8_e4m3fn", "bfloat16", "float32", "int32", ...
std::string dtype_name(at::ScalarType dtype);
// "cuda:0", "cpu", "meta"
std::string device_name(const at::Tensor& t);

// ---- sizes that may be symbolic -------------------------------------------------------------------

// A size or stride that is symbolic (a fake tensor under torch.compile with dynamic shapes). Checks
// involving an unknown value are skipped; the real call re-checks with concrete values.
inline constexpr int64_t kUnknown = std::numeric_limits<int64_t>::min();

inline bool known(int64_t v) { return v != kUnknown; }
inline bool known(int64_t a, int64_t b) { return a != kUnknown and b != kUnknown; }

inline int64_t ceil_div(int64_t a, int64_t b) { return known(a) ? (a + b - 1) / b : kUnknown; }
inline int64_t align_up(int64_t a, int64_t b) { return known(a) ? ceil_div(a, b) * b : kUnknown; }

// The shape/strides of a tensor, or of its transpose over the last two dims, without materializing a
// view (creating a view costs a TensorImpl allocation on the hot path).
struct View {
    const at::Tensor* tensor = nullptr;
    const char* name = "";
    int dim = 0;
    bool transposed = false;  // the user-facing view is tensor.transpose(-2, -1)
    int64_t size[4] = {0, 0, 0, 0};
    int64_t stride[4] = {0, 0, 0, 0};

    // True when the view has no elements (then no stride or alignment rule applies).
    bool empty() const {
        for (int i = 0; i < dim; ++i)
            if (size[i] == 0) return true;
        return false;
    }
    std::string shape_str() const;
    std::string stride_str() const;
};

// `transpose_last2`: describe tensor.transpose(-2, -1) instead (the nn/tn/tt views of the API).
// Throws ValueError for more than 4 dims (no op takes those).
View make_view(const at::Tensor& t, const char* name, bool transpose_last2 = false);

// True when the tensor is a real CPU/CUDA tensor that our fast path may read directly (no Python
// subclass / fake tensor / functionalization wrapper, not meta).
inline bool is_plain_tensor(const at::Tensor& t) {
    constexpr c10::DispatchKeySet kSpecial = c10::DispatchKeySet({
        c10::DispatchKey::Python, c10::DispatchKey::PythonTLSSnapshot, c10::DispatchKey::Functionalize,
        c10::DispatchKey::FuncTorchBatched, c10::DispatchKey::FuncTorchGradWrapper,
        c10::DispatchKey::FuncTorchDynamicLayerFrontMode, c10::DispatchKey::FuncTorchDynamicLayerBackMode});
    const auto ks = t.key_set();
    if (ks.has_any(kSpecial)) return false;
    const auto type = t.device().type();
    return type == c10::DeviceType::CUDA or type == c10::DeviceType::CPU;
}

// True when no Python dispatch mode (FakeTensorMode, a logging mode, ...) is active on this thread.
inline bool no_dispatch_mode_active() { return c10::impl::TorchDispatchModeTLS::stack_len() == 0; }

// ---- checks ---------------------------------------------------------------------------------------

// How much a validation may look at.
enum class CheckMode {
    kReal,  // real tensors: everything, including data pointer alignment
    kFake,  // meta/fake tensors: no data pointers (storage offsets are checked instead), sizes may be symbolic
};

// The check primitives of one op call; every message starts with the op name.
class Checker {
public:
    Checker(const char* op, CheckMode mode) : op_(op), mode_(mode) {}

    const char* op() const { return op_; }
    CheckMode mode() const { return mode_; }

    // ---- dtype (TypeError) ----
    void dtype(const at::Tensor& t, const char* name, at::ScalarType expected) const {
        if (t.scalar_type() != expected) dtype_fail(t, name, {expected});
    }
    void dtype_in(const at::Tensor& t, const char* name, std::initializer_list<at::ScalarType> accepted) const {
        for (auto s : accepted)
            if (t.scalar_type() == s) return;
        dtype_fail(t, name, accepted);
    }

    // ---- shape (ValueError) ----
    // `dims` names the expected dims, e.g. "[M, K]"; used in the message.
    void rank(const View& v, int expected, const char* dims) const {
        if (v.dim != expected) rank_fail(v, expected, dims);
    }
    // v.size[i] must equal `expected` (skipped when either is unknown). `what` names the dim ("K"),
    // `from` says where the expected value comes from ("a.shape[1]").
    void size_eq(const View& v, int i, int64_t expected, const char* what, const char* from) const {
        if (known(v.size[i], expected) and v.size[i] != expected) size_fail(v, i, expected, what, from);
    }
    void value_positive(int64_t value, const char* name) const;
    // A size the kernels take as a 32-bit int (M, N, K, groups, ...) must be at most INT32_MAX
    // (a larger one would be truncated by the cast). `what` names it: "M (a.shape[0])".
    void fits_int32(int64_t value, const char* what) const {
        if (known(value) and value > kMaxInt32) int32_fail(value, what);
    }
    static constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();

    // ---- tensor kind (ValueError) ----
    // Every tensor argument must be strided (dense): sparse / mkldnn tensors have no strides or data
    // pointer the kernels could use.
    void strided(const at::Tensor& t, const char* name) const {
        if (C10_UNLIKELY(t.defined() and t.layout() != c10::kStrided)) layout_fail(t, name);
    }
    // The View of a tensor argument, after the strided check (the ops outside the GEMM table use this).
    View view(const at::Tensor& t, const char* name) const {
        strided(t, name);
        return make_view(t, name);
    }

    // ---- memory layout (ValueError) ----
    // Dim `inner` must have stride 1 (or size <= 1); used for "K-major" / "N-major" rules.
    bool has_unit_stride(const View& v, int inner) const {
        return not known(v.stride[inner]) or v.stride[inner] == 1 or v.size[inner] <= 1;
    }
    // The stride of dim `i` must be a multiple of 16 bytes (TMA) and >= the extent of the dims inside it.
    void tma_outer_stride(const View& v, int i, int64_t min_stride) const;
    // The first element must be 16-byte aligned (TMA). Real mode: the data pointer; fake mode: the
    // storage offset (allocations are aligned).
    void tma_base(const View& v) const;
    void contiguous(const View& v, const char* why) const;

    // ---- devices (RuntimeError) ----
    // All defined tensors must be CUDA tensors on one device; returns the device index.
    int same_cuda_device(std::initializer_list<const View*> views) const;

    // ---- misc ----
    [[noreturn]] void value_error(const std::string& what) const;
    [[noreturn]] void type_error(const std::string& what) const;
    [[noreturn]] void runtime_error(const std::string& what) const;
    [[noreturn]] void not_implemented(const std::string& what) const;

private:
    [[noreturn]] void dtype_fail(const at::Tensor& t, const char* name, std::initializer_list<at::ScalarType> accepted) const;
    [[noreturn]] void rank_fail(const View& v, int expected, const char* dims) const;
    [[noreturn]] void size_fail(const View& v, int i, int64_t expected, const char* what, const char* from) const;
    [[noreturn]] void int32_fail(int64_t value, const char* what) const;
    [[noreturn]] void layout_fail(const at::Tensor& t, const char* name) const;

    const char* op_;
    CheckMode mode_;
};

// The [start, end) byte range a view can touch (for overlap checks); nullopt when unknown.
std::optional<std::pair<uintptr_t, uintptr_t>> byte_range(const View& v);

// ValueError if the output `d` may overlap any of `inputs` (exact aliasing of `allowed_alias` is fine).
void check_no_overlap(const Checker& check, const View& d, std::initializer_list<const View*> inputs);

}  // namespace deep_gemm::api
