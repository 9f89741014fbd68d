// What every torch.library op of deep_gemm shares: its registration (one schema, the same kernel for CUDA and
// CPU, a fake kernel for Meta) and the fast entries' test for tensors that may skip the dispatcher.
#pragma once

#include <torch/library.h>

#include <initializer_list>
#include <optional>
#include <string>
#include <type_traits>

#include "apis/common.hpp"

namespace deep_gemm::python {

// A kernel as m.impl takes it: TORCH_FN(f), or a function returning a torch::CppFunction (a boxed kernel,
// which cannot be copied, is made once per dispatch key).
template <class Kernel>
torch::CppFunction kernel_function(const Kernel& kernel) {
    if constexpr (std::is_invocable_r_v<torch::CppFunction, const Kernel&>)
        return kernel();
    else
        return torch::CppFunction(kernel);
}

// Registers deep_gemm::<name>'s kernels: `real` for CUDA (validation, then the launch) and CPU (the same
// validation, then "requires CUDA tensors", or a CPU result where the op has one), `fake` for Meta
// (validation and output shapes only: what FakeTensor runs under torch.compile).
template <class Real, class Fake>
void impl_kernels(torch::Library& m, const char* name, const Real& real, const Fake& fake) {
    m.impl(name, torch::dispatch(c10::DispatchKey::CUDA, kernel_function(real)));
    m.impl(name, torch::dispatch(c10::DispatchKey::CPU, kernel_function(real)));
    m.impl(name, torch::dispatch(c10::DispatchKey::Meta, kernel_function(fake)));
}

// The op name of a schema ("name(Tensor a, ...) -> ()" gives "name").
inline std::string schema_op_name(const std::string& schema) { return schema.substr(0, schema.find('(')); }

// Defines deep_gemm::<op> by its schema and registers its kernels (impl_kernels).
template <class Real, class Fake>
void def_op(torch::Library& m, const std::string& schema, const Real& real, const Fake& fake) {
    m.def(schema.c_str());
    impl_kernels(m, schema_op_name(schema).c_str(), real, fake);
}

// True when a fast entry may run the op directly: no dispatch mode is active and every given tensor is a
// plain CPU/CUDA tensor (nullptr and undefined ones are skipped). Otherwise the entry calls the dispatcher
// op, so meta, fake and subclass tensors behave as under torch.ops.
inline bool plain_tensors(std::initializer_list<const at::Tensor*> tensors) {
    if (not api::no_dispatch_mode_active()) return false;
    for (const at::Tensor* t : tensors)
        if (t != nullptr and t->defined() and not api::is_plain_tensor(*t)) return false;
    return true;
}

inline const at::Tensor* opt_ptr(const std::optional<at::Tensor>& t) { return t.has_value() ? &*t : nullptr; }

}  // namespace deep_gemm::python
