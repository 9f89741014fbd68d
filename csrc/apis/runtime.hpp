// Process-wide runtime knobs (DeepGEMM's set_num_sms & co.) and the per-device facts the ops need.
// The state lives in runtime.cpp (one translation unit).
#pragma once

#include <cuda.h>

#include <utility>

#include "../jit/jit.hpp"
#include "common.hpp"

namespace deep_gemm::api {

// ---- knobs ----------------------------------------------------------------------------------------

// Caps the persistent grid of every kernel; 0 < n <= the current device's SM count (ValueError
// otherwise; RuntimeError without a CUDA device). 0 removes the cap (all SMs), as in DeepGEMM.
void set_num_sms(int n);
// The cap set by set_num_sms, else the current device's SM count.
int get_num_sms();
// The value to pass to a kernel on `device`: min(cap, device SM count).
int num_sms_for_device(int device);

// DeepGEMM's tensor-core utilisation percentage (1..100, default 100). Only DeepGEMM's SM100 BF16
// kernels read it; it is stored and returned here but has no effect on the SM90 kernels.
void set_tc_util(int percent);
int get_tc_util();

// Restricts the kernel configs to BLOCK_M % m == 0 and BLOCK_N % n == 0 (default 1, 1: no restriction).
// block_size_allowed() is the filter the FP8/BF16 heuristics apply to their candidates.
void set_block_size_multiple_of(int block_m_multiple, int block_n_multiple);
std::pair<int, int> get_block_size_multiple_of();
bool block_size_allowed(int block_m, int block_n);

void set_pdl(bool enabled);  // programmatic dependent launch (default off)
bool get_pdl();

// When set, kernels compile every dim as a runtime value (compiled_dims is ignored): fewer compiles
// for workloads with many shapes, at some speed cost.
void set_ignore_compile_dims(bool ignore);
bool get_ignore_compile_dims();

// Row alignment of each group in the M-grouped contiguous layout. Default 128; any positive value is
// stored; the contiguous ops need a multiple of the theoretical alignment (NotImplementedError otherwise).
void set_mk_alignment_for_contiguous_layout(int alignment);
int get_mk_alignment_for_contiguous_layout();
// The smallest alignment the SM90 kernels can work with (the BLOCK_M of the grouped kernels: 128).
int get_theoretical_mk_alignment_for_contiguous_layout();

// ---- devices --------------------------------------------------------------------------------------

// NotImplementedError unless `device` is an SM90 (Hopper) GPU.
void require_sm90(const Checker& check, int device);

// The current torch CUDA stream of `device`.
CUstream current_stream(int device);

// Translates a failure to query the device (no driver, no GPU) into a RuntimeError naming `what`.
int current_device_or_throw(const char* what);

}  // namespace deep_gemm::api
