// cublaslt_gemm_*: validation (shared with the bf16_gemm_* ops), the mapping of our row-major problem
// onto cuBLASLt's column-major one, and the per-device/per-stream state (handle, workspace) plus the
// memoized descriptors and algorithm of each problem shape.
#include "cublaslt.hpp"

#include <ATen/ATen.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "cublaslt_lib.hpp"
#include "gemm_internal.hpp"
#include "runtime.hpp"

namespace deep_gemm::api {

namespace {

namespace lt = cublaslt;

// The cuBLAS documentation recommends a 32 MiB workspace on Hopper (4 MiB before it); one per stream,
// because work queued on two streams may run at the same time.
constexpr size_t kWorkspaceBytes = size_t{32} << 20;

// The rules of the dense BF16 ops, under our own names (GemmOp is unused by validate()).
constexpr std::array<GemmOpSpec, 4> kCublasLtSpecs = {{
    {GemmOp::kBf16Nt, "cublaslt_gemm_nt", F::kBf16, G::kNone, false, false, nullptr},
    {GemmOp::kBf16Nn, "cublaslt_gemm_nn", F::kBf16, G::kNone, false, true, nullptr},
    {GemmOp::kBf16Tn, "cublaslt_gemm_tn", F::kBf16, G::kNone, true, true, nullptr},
    {GemmOp::kBf16Tt, "cublaslt_gemm_tt", F::kBf16, G::kNone, true, false, nullptr},
}};

const GemmOpSpec& spec_of(CublasLtLayout layout) { return kCublasLtSpecs[static_cast<int>(layout)]; }

// ---- the column-major view ------------------------------------------------------------------------
// cuBLASLt is column-major. Our row-major d [M, N] is, read column-major, D' = d^T [N, M], so we ask
// for D' = op(A') op(B') (+ C') with A' = b (N x K after op) and B' = a (K x M after op).

// One operand as cuBLASLt sees it: a column-major `rows x cols` matrix with leading dimension `ld`,
// used as is (kOpN) or transposed (kOpT).
struct LtOperand {
    int32_t op;
    uint64_t rows, cols;
    int64_t ld;
};

// cuBLASLt requires ld >= rows even when a single column makes ld meaningless (a size-1 dim may carry any stride).
int64_t leading_dim(int64_t stride, uint64_t rows, uint64_t cols) {
    return cols <= 1 ? std::max<int64_t>(static_cast<int64_t>(rows), 1) : stride;
}

// `v` is a or b in the "nt" orientation ([M, K] / [N, K]); validation made it K-major or MN-major.
LtOperand describe(const View& v, bool is_b) {
    const auto mn = static_cast<uint64_t>(v.size[0]), k = static_cast<uint64_t>(v.size[1]);
    const bool k_major = v.stride[1] == 1 or v.size[1] <= 1;
    if (k_major)  // rows of K elements: a column-major K x MN matrix
        return {is_b ? lt::kOpT : lt::kOpN, k, mn, leading_dim(v.stride[0], k, mn)};
    return {is_b ? lt::kOpN : lt::kOpT, mn, k, leading_dim(v.stride[1], mn, k)};  // a column-major MN x K matrix
}

// The largest power of two (up to 256, cuBLASLt's default assumption) dividing the address and, in a
// strided batch, the batch stride in bytes (every matrix's address): the heuristic must only pick kernels
// that can handle it.
uint32_t alignment(const void* p, int64_t batch_stride_bytes = 0) {
    const auto addr = reinterpret_cast<uintptr_t>(p) | static_cast<uintptr_t>(batch_stride_bytes);
    uint32_t a = 256;
    while (a > 1 and addr % a != 0) a >>= 1;
    return a;
}

void check_status(const char* op, const char* fn, lt::Status status) {
    if (status != lt::kSuccess) throw_runtime_error(fmt::format("{}: {} failed: {}", op, fn, lt::status_string(status)));
}

// ---- memoized state ---------------------------------------------------------------------------------

// Everything that decides the descriptors and the algorithm of a call.
struct PlanKey {
    std::array<int64_t, 21> v{};
    bool operator==(const PlanKey&) const = default;
};

struct PlanKeyHash {
    size_t operator()(const PlanKey& key) const {
        size_t h = 0;
        for (int64_t x : key.v) h = (h ^ std::hash<int64_t>{}(x)) * 0x100000001b3ull;
        return h;
    }
};

// Descriptors and the chosen algorithm of one problem. Kept for the life of the process (a model uses
// a bounded set of shapes); the destructor only runs when building a plan fails half way.
struct Plan {
    lt::MatmulDesc desc = nullptr;
    lt::MatrixLayout a = nullptr, b = nullptr, c = nullptr, d = nullptr;  // c: null when C is D
    lt::Algo algo{};

    Plan() = default;
    Plan(const Plan&) = delete;
    Plan& operator=(const Plan&) = delete;
    ~Plan() {
        const lt::Api& api = lt::api();
        for (lt::MatrixLayout l : {a, b, c, d})
            if (l != nullptr) api.matrix_layout_destroy(l);
        if (desc != nullptr) api.matmul_desc_destroy(desc);
    }
};

// A device's handle and one stream's workspace on it.
struct Context {
    lt::Handle handle = nullptr;
    void* workspace = nullptr;
};

struct State {
    std::mutex mutex;
    // Bumped by shutdown(): the threads' remembered contexts and plans of an older generation are stale.
    std::atomic<uint64_t> generation{0};
    std::unordered_map<int, lt::Handle> handles;                                       // per device
    std::map<std::pair<int, CUstream>, at::Tensor> workspaces;                          // per device and stream
    std::unordered_map<PlanKey, std::unique_ptr<Plan>, PlanKeyHash> plans;
};

// Never destroyed: handles and descriptors must not be released after the CUDA context is gone at exit.
State& state() {
    static State* s = new State();
    return *s;
}

Context context_for(const char* op, int device, CUstream stream) {
    // The last context a thread used is remembered so a steady stream of calls takes no lock.
    thread_local int last_device = -1;
    thread_local CUstream last_stream = nullptr;
    thread_local Context last;
    thread_local uint64_t last_generation = 0;
    State& s = state();
    const uint64_t generation = s.generation.load(std::memory_order_acquire);
    if (device == last_device and stream == last_stream and last.handle != nullptr and last_generation == generation) return last;

    std::lock_guard<std::mutex> lock(s.mutex);
    Context ctx;
    auto& handle = s.handles[device];
    if (handle == nullptr) check_status(op, "cublasLtCreate", lt::api().create(&handle));
    ctx.handle = handle;
    at::Tensor& ws = s.workspaces[{device, stream}];
    if (not ws.defined())  // allocated on `stream` (the current one): the caching allocator ties the block to it
        ws = at::empty({static_cast<int64_t>(kWorkspaceBytes)}, at::TensorOptions().dtype(at::kByte).device(at::kCUDA, device));
    ctx.workspace = ws.data_ptr();
    last_device = device, last_stream = stream, last = ctx, last_generation = s.generation.load(std::memory_order_relaxed);
    return ctx;
}

// `batch` > 1: a strided batch, matrix i at `batch_stride` * i elements past the first.
lt::MatrixLayout make_layout(const char* op, int dtype, uint64_t rows, uint64_t cols, int64_t ld, int32_t batch,
                             int64_t batch_stride) {
    const lt::Api& api = lt::api();
    lt::MatrixLayout l = nullptr;
    check_status(op, "cublasLtMatrixLayoutCreate", api.matrix_layout_create(&l, dtype, rows, cols, ld));
    if (batch > 1) {
        lt::Status st = api.matrix_layout_set_attribute(l, lt::kLayoutBatchCount, &batch, sizeof(batch));
        if (st == lt::kSuccess)
            st = api.matrix_layout_set_attribute(l, lt::kLayoutStridedBatchOffset, &batch_stride, sizeof(batch_stride));
        if (st != lt::kSuccess) api.matrix_layout_destroy(l);
        check_status(op, "cublasLtMatrixLayoutSetAttribute", st);
    }
    return l;
}

// A strided batch of problems (cublaslt_gemm_batched): matrix i of our a, b and d at these strides (elements)
// past matrix 0; count 1 is a single problem.
struct Batch {
    int32_t count = 1;
    int64_t a = 0, b = 0, d = 0;
};

// A validated call in cuBLASLt's terms.
struct LtProblem {
    LtOperand a, b;  // cuBLASLt's A' (our b) and B' (our a)
    uint64_t m, n, k;
    int ab_type, d_type;  // cuBLASLt's A' and B' share a dtype; C has D's
    int64_t ldd, ldc;
    bool separate_c;
    uint32_t align_a, align_b, align_c, align_d;
    Batch batch;  // strides of our a, b, d (cuBLASLt's B', A', D)
};

std::unique_ptr<Plan> make_plan(const char* op, lt::Handle handle, const LtProblem& q) {
    const lt::Api& api = lt::api();
    auto plan = std::make_unique<Plan>();
    check_status(op, "cublasLtMatmulDescCreate", api.matmul_desc_create(&plan->desc, lt::kCompute32F, lt::kDataF32));
    check_status(op, "cublasLtMatmulDescSetAttribute",
                 api.matmul_desc_set_attribute(plan->desc, lt::kDescTransA, &q.a.op, sizeof(q.a.op)));
    check_status(op, "cublasLtMatmulDescSetAttribute",
                 api.matmul_desc_set_attribute(plan->desc, lt::kDescTransB, &q.b.op, sizeof(q.b.op)));
    const Batch& batch = q.batch;
    plan->a = make_layout(op, q.ab_type, q.a.rows, q.a.cols, q.a.ld, batch.count, batch.b);
    plan->b = make_layout(op, q.ab_type, q.b.rows, q.b.cols, q.b.ld, batch.count, batch.a);
    plan->d = make_layout(op, q.d_type, q.n, q.m, q.ldd, batch.count, batch.d);
    if (q.separate_c) plan->c = make_layout(op, q.d_type, q.n, q.m, q.ldc, 1, 0);

    lt::Preference pref = nullptr;
    check_status(op, "cublasLtMatmulPreferenceCreate", api.preference_create(&pref));
    const uint64_t max_workspace = kWorkspaceBytes;
    lt::Status st = api.preference_set_attribute(pref, lt::kPrefMaxWorkspaceBytes, &max_workspace, sizeof(max_workspace));
    const std::pair<int, uint32_t> aligns[] = {{lt::kPrefMinAlignmentA, q.align_a}, {lt::kPrefMinAlignmentB, q.align_b},
                                               {lt::kPrefMinAlignmentC, q.align_c}, {lt::kPrefMinAlignmentD, q.align_d}};
    for (const auto& [attr, value] : aligns)
        if (st == lt::kSuccess) st = api.preference_set_attribute(pref, attr, &value, sizeof(value));
    lt::HeuristicResult result{};
    int returned = 0;
    if (st == lt::kSuccess)
        st = api.algo_get_heuristic(handle, plan->desc, plan->a, plan->b, plan->c ? plan->c : plan->d, plan->d, pref, 1, &result, &returned);
    api.preference_destroy(pref);
    check_status(op, "cublasLtMatmulAlgoGetHeuristic", st);
    if (returned == 0 or result.state != lt::kSuccess)
        throw_runtime_error(fmt::format("{}: cuBLASLt has no algorithm for M={}, N={}, K={} with these layouts, {} operands and a {} "
                                        "output", op, q.m, q.n, q.k, q.ab_type == lt::kDataF8E4M3 ? "float8_e4m3fn" : "bfloat16",
                                        q.d_type == lt::kDataF32 ? "float32" : "bfloat16"));
    plan->algo = result.algo;
    return plan;
}

const Plan& plan_for(const char* op, int device, lt::Handle handle, const LtProblem& q) {
    PlanKey key;
    key.v = {device, static_cast<int64_t>(q.m), static_cast<int64_t>(q.n), static_cast<int64_t>(q.k), q.a.op, q.b.op, q.a.ld, q.b.ld,
             q.ldc, q.ldd, q.ab_type, q.d_type, q.separate_c, q.align_a, q.align_b, q.align_c, q.align_d,
             q.batch.count, q.batch.a, q.batch.b, q.batch.d};
    thread_local PlanKey last_key;
    thread_local const Plan* last_plan = nullptr;
    thread_local uint64_t last_generation = 0;
    State& s = state();
    const uint64_t generation = s.generation.load(std::memory_order_acquire);
    if (last_plan != nullptr and key == last_key and last_generation == generation) return *last_plan;

    std::lock_guard<std::mutex> lock(s.mutex);
    auto& slot = s.plans[key];
    if (slot == nullptr) {
        try {
            slot = make_plan(op, handle, q);
        } catch (...) {
            s.plans.erase(key);
            throw;
        }
    }
    last_key = key, last_plan = slot.get(), last_generation = s.generation.load(std::memory_order_relaxed);
    return *slot;
}

// ---- the call -----------------------------------------------------------------------------------

// One problem, or (batch.count > 1, no c) the strided batch whose first matrices a, b, d are.
void run(const char* op, const Problem& p, const at::Tensor& a, const at::Tensor& b, const at::Tensor& d, const at::Tensor* c,
         int device, float alpha, const Batch& batch = {}) {
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
    if (p.m == 0 or p.n == 0) return;
    if (p.k == 0) {  // no product: d = c (or zeros), whatever alpha is
        if (c == nullptr)
            d.zero_();
        else if (not p.c_is_d)
            d.copy_(*c);
        return;
    }
    LtProblem q;
    q.a = describe(p.b, /*is_b=*/true);
    q.b = describe(p.a, /*is_b=*/false);
    q.m = p.m, q.n = p.n, q.k = p.k;
    // FP8 (validated K-major: cuBLASLt's required "TN" form) with FP32 accumulation and unit A/B scales.
    q.ab_type = a.scalar_type() == at::kFloat8_e4m3fn ? lt::kDataF8E4M3 : lt::kDataBf16;
    q.d_type = d.scalar_type() == at::kFloat ? lt::kDataF32 : lt::kDataBf16;
    q.ldd = leading_dim(p.d.stride[0], q.n, q.m);
    q.ldc = q.ldd;
    q.separate_c = false;
    const void* c_ptr = d.data_ptr();
    float beta = 0.0f;
    if (c != nullptr) {
        beta = 1.0f;
        if (not p.c_is_d) {
            // cuBLASLt reads C with D's dtype and row order (its FP8 table, too, pairs C and D as bfloat16/bfloat16
            // or float32/float32); anything else (a float32 c for a bfloat16 d, column-major or broadcast rows)
            // is first copied into d, then accumulated in place (C == D).
            const bool direct = c->scalar_type() == d.scalar_type() and (p.c.stride[1] == 1 or p.n <= 1) and
                                (p.c.stride[0] >= p.n or p.m <= 1);
            if (direct) {
                q.separate_c = true;
                q.ldc = leading_dim(p.c.stride[0], q.n, q.m);
                c_ptr = c->const_data_ptr();
            } else {
                d.copy_(*c);
            }
        }
    }
    q.batch = batch;
    q.align_a = alignment(b.const_data_ptr(), batch.b * int64_t(b.element_size()));
    q.align_b = alignment(a.const_data_ptr(), batch.a * int64_t(a.element_size()));
    q.align_d = alignment(d.const_data_ptr(), batch.d * int64_t(d.element_size()));
    q.align_c = q.separate_c ? alignment(c_ptr) : q.align_d;

    const CUstream stream = current_stream(device);
    const Context ctx = context_for(op, device, stream);
    const Plan& plan = plan_for(op, device, ctx.handle, q);
    check_status(op, "cublasLtMatmul",
                 lt::api().matmul(ctx.handle, plan.desc, &alpha, b.const_data_ptr(), plan.a, a.const_data_ptr(), plan.b, &beta, c_ptr,
                                  plan.c ? plan.c : plan.d, d.data_ptr(), plan.d, &plan.algo, ctx.workspace, kWorkspaceBytes, stream));
}

// Fake/meta tensors: fake tensors carry their would-be devices, which must agree; meta tensors carry none
// and must not be mixed with tensors on a device.
void check_fake_devices(const Checker& check, std::initializer_list<const View*> views) {
    const View *meta = nullptr, *first = nullptr;
    for (const View* v : views) {
        if (v == nullptr) continue;
        if (v->tensor->is_meta()) {
            if (meta == nullptr) meta = v;
        } else if (first == nullptr) {
            first = v;
        } else if (v->tensor->device() != first->tensor->device()) {
            check.runtime_error(fmt::format("all tensors must be on the same CUDA device; {} is on {} but {} is on {}", first->name,
                                            device_name(*first->tensor), v->name, device_name(*v->tensor)));
        }
    }
    if (meta != nullptr and first != nullptr)
        check.runtime_error(fmt::format("cannot mix meta tensors with tensors on a device; {} is on meta but {} is on {}", meta->name,
                                        first->name, device_name(*first->tensor)));
}

// After the BF16 rules (K is known to agree): 16-byte (16-element) K rows.
void check_fp8_k(const Checker& check, const Problem& p) {
    if (known(p.k) and p.k % 16 != 0)
        check.value_error(fmt::format("K must be a multiple of 16 for float8_e4m3fn operands (cuBLASLt's FP8 kernels read 16-byte "
                                      "aligned K rows); got K = {}", p.k));
}

// The operands checked under `spec`'s rules (its name in errors). `allow_fp8`: a and b may instead both be
// float8_e4m3fn (the same rules, K-major operands only: cuBLASLt's FP8 kernels take only the "TN" form, column-major
// A' transposed and B' not, which is both of our operands K-major; plus check_fp8_k).
Problem validate_operands(const GemmOpSpec& spec, const Checker& check, const at::Tensor& a, const at::Tensor& b,
                          const at::Tensor& d, const at::Tensor* c, bool allow_fp8) {
    GemmCall call;
    call.a = &a, call.b = &b, call.d = &d, call.c = c;
    call.compiled_dims = "";
    const bool fp8 = allow_fp8 and (a.scalar_type() == at::kFloat8_e4m3fn or b.scalar_type() == at::kFloat8_e4m3fn);
    if (fp8 and a.scalar_type() != b.scalar_type())
        check.type_error(fmt::format("a and b must have the same dtype (both bfloat16 or both float8_e4m3fn); got {} and {}",
                                     dtype_name(a.scalar_type()), dtype_name(b.scalar_type())));
    if (fp8) call.ab_dtype = at::kFloat8_e4m3fn;
    Problem p = validate(spec, call, check);
    if (fp8) check_fp8_k(check, p);
    return p;
}

// Validates the call under `spec` (its rules, its name in errors), then runs it through cuBLASLt.
void gemm_with_spec(const GemmOpSpec& spec, const at::Tensor& a, const at::Tensor& b, const at::Tensor& d,
                    const std::optional<at::Tensor>& c, bool fake, float alpha, bool allow_fp8) {
    const Checker check(spec.name, fake ? CheckMode::kFake : CheckMode::kReal);
    const at::Tensor* c_ptr = c.has_value() and c->defined() ? &*c : nullptr;
    const Problem p = validate_operands(spec, check, a, b, d, c_ptr, allow_fp8);
    const View* c_view = p.has_c ? &p.c : nullptr;
    if (fake) {
        check_fake_devices(check, {&p.a, &p.b, &p.d, c_view});
        return;
    }
    const int device = check.same_cuda_device({&p.a, &p.b, &p.d, c_view});
    run(spec.name, p, a, b, d, c_ptr, device, alpha);
}

}  // namespace

const char* cublaslt_op_name(CublasLtLayout layout) { return spec_of(layout).name; }

void cublaslt_gemm_batched(CublasLtLayout layout, const at::Tensor& a, const at::Tensor& b, const at::Tensor& d) {
    const GemmOpSpec& spec = spec_of(layout);
    const Checker check(spec.name, CheckMode::kReal);
    for (const at::Tensor* t : {&a, &b, &d})
        if (t->dim() != 3)
            check.value_error(fmt::format("a batched call takes 3-D a, b and d (the batch first); got {}-D", t->dim()));
    const int64_t count = d.size(0);
    if (a.size(0) != count or b.size(0) != count)
        check.value_error(fmt::format("a, b and d must hold the same number of matrices; got {}, {} and {}", a.size(0), b.size(0), count));
    if (count == 0) return;
    if (count > std::numeric_limits<int32_t>::max())
        check.value_error(fmt::format("at most {} matrices in a batch; got {}", std::numeric_limits<int32_t>::max(), count));
    // Every matrix has the first one's sizes and strides: validating the first validates them all.
    const at::Tensor a0 = a.select(0, 0), b0 = b.select(0, 0), d0 = d.select(0, 0);
    const Problem p = validate_operands(spec, check, a0, b0, d0, nullptr, /*allow_fp8=*/false);
    const int device = check.same_cuda_device({&p.a, &p.b, &p.d});
    if (p.m == 0 or p.n == 0) return;
    // d's matrices must not share an element: stacked (each past the whole previous one) or with their rows
    // interleaved (one row of every matrix between two rows of one), as [B, H, D].transpose(0, 1) gives.
    const int64_t sb = d.stride(0), sm = p.d.stride[0], row = (p.n - 1) * p.d.stride[1] + 1;
    const bool stacked = sb >= (p.m - 1) * sm + row;
    const bool interleaved = sb >= row and (count - 1) * sb + row <= sm;
    if (count > 1 and not stacked and not interleaved)
        check.value_error(fmt::format("d's matrices overlap (strides {}); each output element must belong to one matrix",
                                      fmt::join(d.strides(), ", ")));
    if (p.k == 0) {
        c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
        d.zero_();
        return;
    }
    run(spec.name, p, a0, b0, d0, nullptr, device, 1.0f, Batch{int32_t(count), a.stride(0), b.stride(0), d.stride(0)});
}

void cublaslt_gemm(CublasLtLayout layout, const at::Tensor& a, const at::Tensor& b, const at::Tensor& d,
                   const std::optional<at::Tensor>& c, bool fake, float alpha) {
    gemm_with_spec(spec_of(layout), a, b, d, c, fake, alpha, /*allow_fp8=*/true);
}

void bf16_gemm_cublaslt(CublasLtLayout layout, const at::Tensor& a, const at::Tensor& b, const at::Tensor& d,
                        const std::optional<at::Tensor>& c, bool fake, float alpha) {
    static_assert(int(GemmOp::kBf16Nn) - int(GemmOp::kBf16Nt) == int(CublasLtLayout::kNn) and
                      int(GemmOp::kBf16Tn) - int(GemmOp::kBf16Nt) == int(CublasLtLayout::kTn) and
                      int(GemmOp::kBf16Tt) - int(GemmOp::kBf16Nt) == int(CublasLtLayout::kTt),
                  "the bf16_gemm_* ops are in CublasLtLayout order");
    gemm_with_spec(op_spec(static_cast<GemmOp>(int(GemmOp::kBf16Nt) + int(layout))), a, b, d, c, fake, alpha, /*allow_fp8=*/false);
}

void cublaslt_gemm_scaled(int64_t layout, const at::Tensor& a, const at::Tensor& b, const at::Tensor& d,
                          const std::optional<at::Tensor>& c, double alpha, bool fake) {
    if (layout < 0 or layout > 3) throw_value_error(fmt::format("_cublaslt_gemm_scaled: layout must be 0..3; got {}", layout));
    bf16_gemm_cublaslt(static_cast<CublasLtLayout>(layout), a, b, d, c, fake, static_cast<float>(alpha));
}

void cublaslt_shutdown() {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.handles.empty() and s.workspaces.empty() and s.plans.empty()) return;
    // Queued matmuls may still use a workspace or handle: let each device finish first. At exit the CUDA
    // runtime may already be unusable; then there is nothing left to wait for.
    for (const auto& [device, handle] : s.handles) {
        try {
            c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
            c10::cuda::device_synchronize();
        } catch (const std::exception&) {
        }
    }
    s.plans.clear();  // destroys the descriptors
    for (const auto& [device, handle] : s.handles)
        if (handle != nullptr) lt::api().destroy(handle);
    s.handles.clear();
    s.workspaces.clear();  // back to PyTorch's caching allocator
    s.generation.fetch_add(1, std::memory_order_release);
}

CublasLtInfo cublaslt_library_info() {
    const cublaslt::Api& api = cublaslt::api();
    return {api.path, api.version};
}

}  // namespace deep_gemm::api
