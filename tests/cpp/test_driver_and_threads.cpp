// Without a GPU: nothing in build() needs the driver, the driver-facing calls fail cleanly, and threads
// of one process building the same kernel compile it once.
#include <dlfcn.h>

#include <atomic>
#include <thread>

#include "jit/errors.hpp"
#include "test_util.hpp"

using namespace deep_gemm::jit;
namespace fs = std::filesystem;

namespace {
bool driver_present() {
    void* handle = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) ::dlclose(handle);
    return handle != nullptr;
}
}  // namespace

TEST(Driver, MissingDriverIsACudaErrorNotACrash) {
    if (driver_present()) GTEST_SKIP() << "a CUDA driver is installed here; this test is for machines without one";
    try {
        device_info(0);
        FAIL() << "expected CudaError";
    } catch (const CudaError& e) {
#ifndef DG_JIT_USE_RUNTIME_API
        EXPECT_NE(std::string(e.what()).find("libcuda.so.1"), std::string::npos) << e.what();
#endif
    }
    EXPECT_THROW(driver(), CudaError);
    EXPECT_THROW(driver(), CudaError) << "a failed load is reported again, not cached as success";
    try {
        check_driver(CUDA_ERROR_INVALID_VALUE, "cuSomething");
        FAIL() << "expected CudaError";
    } catch (const CudaError& e) {
        EXPECT_NE(std::string(e.what()).find("cuSomething"), std::string::npos) << e.what();
    }
    EXPECT_NO_THROW(check_driver(CUDA_SUCCESS, "fine"));
}

TEST(Threads, EightThreadsOneKernelCompileOnce) {
    dg_test::TempDir dir;
    dg_test::ScopedEnv env;
    dg_test::clear_dg_env(env);
    env.set("DG_JIT_CACHE_DIR", (dir.path() / "cache").string());
    dg_test::write_counting_nvcc(dir.path() / "nvcc", dir.path() / "count");
    env.set("DG_JIT_NVCC_COMPILER", (dir.path() / "nvcc").string());
    set_include_dir(dg_test::kTestInclude);
    std::atomic<int> compiled{0}, failed{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < 8; ++i) {
        threads.emplace_back([&] {
            try {
                compiled += build(dg_test::small_source(42), "sm_90a").compiled ? 1 : 0;
            } catch (...) {
                ++failed;
            }
        });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(failed.load(), 0);
    EXPECT_EQ(compiled.load(), 1);
    EXPECT_EQ(dg_test::count_lines(dir.path() / "count"), 1);
    EXPECT_EQ(dg_test::list_dir(dir.path() / "cache" / "cache").size(), 1u);
}
