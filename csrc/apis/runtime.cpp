#include "runtime.hpp"

#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#include <fmt/format.h>

#include <atomic>

namespace deep_gemm::api {

namespace {

std::atomic<int> g_num_sms{0};  // 0: the device's SM count
std::atomic<bool> g_pdl{false};
std::atomic<bool> g_ignore_compile_dims{false};
std::atomic<int> g_mk_alignment{128};

}  // namespace

int current_device_or_throw(const char* what) {
    int count = 0;
    try {
        count = c10::cuda::device_count();
    } catch (const c10::Error& e) {
        throw_runtime_error(fmt::format("{}: cannot query CUDA devices: {}", what, e.what_without_backtrace()));
    }
    if (count <= 0) throw_runtime_error(fmt::format("{}: no CUDA device is available", what));
    return c10::cuda::current_device();
}

void require_sm90(const Checker& check, int device) {
    const auto& info = jit::device_info(device);
    if (info.cc_major != 9)
        check.not_implemented(fmt::format("requires an SM90 (Hopper, sm_90a) GPU; cuda:{} is sm_{}{}", device, info.cc_major,
                                          info.cc_minor));
}

CUstream current_stream(int device) {
    return reinterpret_cast<CUstream>(c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device)).stream());
}

void set_num_sms(int n) {
    if (n < 0) throw_value_error(fmt::format("set_num_sms: the SM count must be positive, or 0 for all SMs; got {}", n));
    if (n == 0) {  // DeepGEMM's "no cap": every SM of the device
        g_num_sms.store(0);
        return;
    }
    const int device = current_device_or_throw("set_num_sms");
    const int available = jit::device_info(device).sm_count;
    if (n > available)
        throw_value_error(fmt::format("set_num_sms: cuda:{} has {} SMs; got {}", device, available, n));
    g_num_sms.store(n);
}

int get_num_sms() {
    const int n = g_num_sms.load();
    if (n > 0) return n;
    return jit::device_info(current_device_or_throw("get_num_sms")).sm_count;
}

int num_sms_for_device(int device) {
    const int available = jit::device_info(device).sm_count;
    const int n = g_num_sms.load(std::memory_order_relaxed);
    return (n > 0 and n < available) ? n : available;
}

namespace {
std::atomic<int> g_tc_util{100};
std::atomic<int> g_block_m_multiple{1}, g_block_n_multiple{1};
}  // namespace

void set_tc_util(int percent) {
    if (percent <= 0 or percent > 100)
        throw_value_error(fmt::format("set_tc_util: the tensor-core utilisation is a percentage in 1..100; got {}", percent));
    g_tc_util.store(percent);
}
int get_tc_util() { return g_tc_util.load(std::memory_order_relaxed); }

void set_block_size_multiple_of(int block_m_multiple, int block_n_multiple) {
    if (block_m_multiple <= 0 or block_n_multiple <= 0)
        throw_value_error(fmt::format("set_block_size_multiple_of: the multiples must be positive; got ({}, {})", block_m_multiple,
                                      block_n_multiple));
    g_block_m_multiple.store(block_m_multiple), g_block_n_multiple.store(block_n_multiple);
}
std::pair<int, int> get_block_size_multiple_of() {
    return {g_block_m_multiple.load(std::memory_order_relaxed), g_block_n_multiple.load(std::memory_order_relaxed)};
}
bool block_size_allowed(int block_m, int block_n) {
    const auto [mm, mn] = get_block_size_multiple_of();
    return block_m % mm == 0 and block_n % mn == 0;
}

void set_pdl(bool enabled) { g_pdl.store(enabled); }
bool get_pdl() { return g_pdl.load(std::memory_order_relaxed); }

void set_ignore_compile_dims(bool ignore) { g_ignore_compile_dims.store(ignore); }
bool get_ignore_compile_dims() { return g_ignore_compile_dims.load(std::memory_order_relaxed); }

// The SM90 grouped kernels of this build tile the contiguous layout with BLOCK_M = 128 rows per group
// segment (a tile never straddles two groups), so 128 is the smallest alignment they accept.
int get_theoretical_mk_alignment_for_contiguous_layout() { return 128; }

// Stores any positive value, as DeepGEMM does (engines set a value, run, and restore the old one). The
// M-grouped contiguous ops reject a stored value their kernels cannot honour (not a multiple of 128) when
// called (validate() in gemm_validation.cpp), so setting and restoring never fails.
void set_mk_alignment_for_contiguous_layout(int alignment) {
    if (alignment <= 0)
        throw_value_error(fmt::format("set_mk_alignment_for_contiguous_layout: the alignment must be positive; got {}", alignment));
    g_mk_alignment.store(alignment);
}
int get_mk_alignment_for_contiguous_layout() { return g_mk_alignment.load(std::memory_order_relaxed); }

}  // namespace deep_gemm::api
