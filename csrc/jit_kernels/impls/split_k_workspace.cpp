#include "split_k_workspace.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>

#include "../../jit/driver_api.hpp"
#include "../../jit/errors.hpp"
#include "../../jit/jit.hpp"

namespace deep_gemm::kernels {

SplitKWorkspace split_k_workspace(int device, CUstream stream, size_t partial_bytes, size_t tiles) {
    struct Buffer {
        CUdeviceptr base = 0;
        size_t partial_bytes = 0, tiles = 0;
    };
    const jit::detail::DriverEntryPoints& api = jit::detail::driver_entry_points();
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    cuuint64_t capture_id = 0;
    jit::check_driver(api.cuStreamGetCaptureInfo(stream, &status, &capture_id, nullptr, nullptr, nullptr),
                      "split-K workspace: cuStreamGetCaptureInfo");
    if (status != CU_STREAM_CAPTURE_STATUS_ACTIVE) capture_id = 0;
    static std::mutex mutex;
    static std::map<std::tuple<int, CUstream, cuuint64_t>, Buffer> buffers;
    std::lock_guard<std::mutex> lock(mutex);
    Buffer& b = buffers[{device, stream, capture_id}];
    if (b.base == 0 || b.partial_bytes < partial_bytes || b.tiles < tiles) {
        jit::detail::ContextGuard ctx(device);
        Buffer grown;
        grown.partial_bytes = std::max(partial_bytes, b.partial_bytes);
        grown.tiles = std::max(tiles, b.tiles);
        // A capture in global mode forbids cuMemAlloc on this thread; relaxed mode allows it (the memory is
        // allocated now, not at replay).
        CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
        jit::check_driver(api.cuThreadExchangeStreamCaptureMode(&mode), "split-K workspace: capture mode");
        const CUresult alloc = api.cuMemAlloc(&grown.base, grown.partial_bytes + grown.tiles * 4);
        jit::check_driver(api.cuThreadExchangeStreamCaptureMode(&mode), "split-K workspace: capture mode");
        jit::check_driver(alloc, "split-K workspace: cuMemAlloc");
        jit::check_driver(api.cuMemsetD32Async(grown.base + grown.partial_bytes, 0u, grown.tiles, stream),
                          "split-K workspace: cuMemsetD32Async");
        b = grown;  // the outgrown buffer is not freed (see above)
    }
    return {reinterpret_cast<float*>(b.base), reinterpret_cast<unsigned int*>(b.base + b.partial_bytes)};
}

}  // namespace deep_gemm::kernels
