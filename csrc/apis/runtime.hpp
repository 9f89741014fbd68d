// Process-wide runtime knobs (DeepGEMM's set_num_sms & co.) and the per-device facts the ops need.
// The state lives in runtime.cpp (one translation unit).
#pragma once

#include <cuda.h>

#include "../jit/jit.hpp"
#include "common.hpp"

namespace deep_gemm::api {

// ---- knobs ----------------------------------------------------------------------------------------

// Caps the persistent grid of every kernel; 0 < n <= the current device's SM count (ValueError
// otherwise; RuntimeError without a CUDA device).
void set_num_sms(int n);
// The cap set by set_num_sms, else the current device's SM count.
int get_num_sms();
// The value to pass to a kernel on `device`: min(cap, device SM count).
int num_sms_for_device(int device);

void set_pdl(bool enabled);  // programmatic dependent launch (default off)
bool get_pdl();

// When set, kernels compile every dim as a runtime value (compiled_dims is ignored): fewer compiles
// for workloads with many shapes, at some speed cost.
void set_ignore_compile_dims(bool ignore);
bool get_ignore_compile_dims();

// Row alignment of each group in the M-grouped contiguous layout (and K alignment of the K-grouped
// one). Default 128; must be a positive multiple of the theoretical alignment.
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
