// What host and device share about a kernel's parameters: the basic types, the tensor-map descriptor, and the
// vocabulary of the parameter lists. Plain C++ with no standard or CUDA headers, so that NVCC, NVRTC and the host
// compiler all read it (CUDA keywords appear only in macros the device side expands).
#pragma once

namespace deep_gemm {

using u8 = unsigned char;
using u16 = unsigned short;
using u32 = unsigned int;
using i32 = int;
using u64 = unsigned long long;

// Same size as the driver's CUtensorMap (an opaque 128-byte object), 64-byte aligned as TMA needs.
// Kernels take it as `const __grid_constant__ TmaDescriptor` so the copy engine reads it from the
// parameter space; the host copies in a CUtensorMap built by cuTensorMapEncodeTiled.
struct alignas(64) TmaDescriptor {
    u64 opaque[16];
};
static_assert(sizeof(TmaDescriptor) == 128, "TmaDescriptor must be 128 bytes");

}  // namespace deep_gemm

// A kernel's parameter list is written once, in its impls/<kernel>_params.hpp, as a macro LIST(TMAP, X, SEP):
// TMAP(name) for a tensor map, X(type, name) for any other parameter, SEP() between two. The generated entry
// point declares its parameters with DG_PARAM_DECLS(LIST) and hands them on with DG_PARAM_NAMES(LIST); the host
// fills the struct DG_DEFINE_KERNEL_PARAMS(Struct, LIST) defines and launches with the address of each field (of
// each tensor map, which the struct points to rather than copies), in the list's order (visit_fields; csrc/jit_kernels/impls/kernel_source.hpp). Separate parameters, not one struct parameter: the compiler loads
// and keeps a struct parameter's fields differently, which changes the kernels' register allocation.
#define DG_PARAM_SEP_COMMA() ,
#define DG_PARAM_SEP_NONE()
#define DG_PARAM_DECL_TMAP(name) const __grid_constant__ deep_gemm::TmaDescriptor name
#define DG_PARAM_DECL(type, name) type name
#define DG_PARAM_NAME_TMAP(name) name
#define DG_PARAM_NAME(type, name) name
#define DG_PARAM_FIELD_TMAP(name) const ::deep_gemm::TmaDescriptor* name;
#define DG_PARAM_FIELD(type, name) type name;
#define DG_PARAM_VISIT_TMAP(name) visit(*name);
#define DG_PARAM_VISIT(type, name) visit(name);
#define DG_PARAM_MEMBER_TMAP(name) visit(name);
#define DG_PARAM_COUNT_TMAP(name) +1
#define DG_PARAM_COUNT(type, name) +1
#define DG_PARAM_DECLS(LIST) LIST(DG_PARAM_DECL_TMAP, DG_PARAM_DECL, DG_PARAM_SEP_COMMA)
#define DG_PARAM_NAMES(LIST) LIST(DG_PARAM_NAME_TMAP, DG_PARAM_NAME, DG_PARAM_SEP_COMMA)
#define DG_PARAM_FIELDS(LIST) LIST(DG_PARAM_FIELD_TMAP, DG_PARAM_FIELD, DG_PARAM_SEP_NONE)

// A pointer whose pointee the host cannot name, a device-only type (__nv_bfloat16, __half) or one the instance
// picks (a macro the generated source defines before it includes the kernel), is written DG_DEVICE_TYPE(T)* in
// the list: NVCC and NVRTC (__CUDACC__) read T*, the host compiler reads void*. Pointers only: every object
// pointer has the size of void* and the launch copies the field's bytes, so the host's struct still matches the
// entry point (a non-pointer use would be a `void` field, which does not compile).
#if defined(__CUDACC__)
#define DG_DEVICE_TYPE(T) T
#else
#define DG_DEVICE_TYPE(T) void
static_assert(sizeof(void*) == sizeof(float*) && sizeof(void*) == sizeof(unsigned short*),
              "DG_DEVICE_TYPE: the host holds a device type's pointer as void*");
#endif

// A parameter the kernel reads in place, through its address (e.g. an array of tensor maps indexed at run time),
// is written X(DG_GRID_CONSTANT(T), name): the entry point declares `const __grid_constant__ T name` (no copy
// to local memory), the host's struct holds a plain T. T is plain data whose layout both compilers agree on.
#if defined(__CUDACC__)
#define DG_GRID_CONSTANT(T) const __grid_constant__ T
#else
#define DG_GRID_CONSTANT(T) T
#endif

// The host's struct of a list: its fields in order, the list's name for the generated source (kList), the
// number of parameters, a visitor over the launch arguments in order (a tensor map's descriptor, the others'
// fields) and one over the struct's own members (host code only: NVCC and NVRTC see a declaration).
#if defined(__CUDACC__)
#define DG_DEFINE_KERNEL_PARAMS(Struct, LIST) struct Struct
#else
#define DG_DEFINE_KERNEL_PARAMS(Struct, LIST)                                          \
    struct Struct {                                                                    \
        static constexpr const char* kList = #LIST;                                    \
        static constexpr int kNumParams = 0 LIST(DG_PARAM_COUNT_TMAP, DG_PARAM_COUNT, DG_PARAM_SEP_NONE); \
        DG_PARAM_FIELDS(LIST)                                                          \
        template <typename Visit>                                                      \
        void visit_fields(Visit&& visit) {                                             \
            LIST(DG_PARAM_VISIT_TMAP, DG_PARAM_VISIT, DG_PARAM_SEP_NONE)               \
        }                                                                              \
        template <typename Visit>                                                      \
        void visit_members(Visit&& visit) {                                            \
            LIST(DG_PARAM_MEMBER_TMAP, DG_PARAM_VISIT, DG_PARAM_SEP_NONE)              \
        }                                                                              \
    }
#endif
