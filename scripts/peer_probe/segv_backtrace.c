// LD_PRELOAD helper: on SIGSEGV, prints the native stack (shared object + offset + nearest exported symbol) to
// stderr, so a crash inside an extension module shows where it is (Python's faulthandler shows only Python
// frames; the GPU hosts have no gdb). Resolve offsets with `addr2line -f -C -e LIB OFFSET`.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

static void on_segv(int sig, siginfo_t* info, void* ctx) {
    (void)sig, (void)ctx;
    void* frames[64];
    const int n = backtrace(frames, 64);
    fprintf(stderr, "SIGSEGV at address %p\n", info->si_addr);
    for (int i = 0; i < n; ++i) {
        Dl_info where;
        if (dladdr(frames[i], &where) && where.dli_fname)
            fprintf(stderr, "#%d %s +0x%lx %s\n", i, where.dli_fname,
                    (unsigned long)((char*)frames[i] - (char*)where.dli_fbase), where.dli_sname ? where.dli_sname : "?");
    }
    _exit(139);
}

__attribute__((constructor)) static void install(void) {
    struct sigaction action = {0};
    action.sa_sigaction = on_segv;
    action.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &action, 0);
}
