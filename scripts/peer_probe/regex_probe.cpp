// Does std::regex work on this host? The peer (DeepGEMM v2.6.1) crashed on an H200 host inside std::regex's
// constructor (its JIT include parser, pattern below). Built standalone and as a shared object loaded by
// Python with and without torch, this tells a toolchain problem from an interaction with torch's libraries.
#include <cstdio>
#include <regex>
#include <string>

extern "C" int count_includes(const char* text) {
    const std::regex pattern(R"(#\s*include\s*[<"][^>"]+[>"])");
    const std::string code(text);
    int n = 0;
    for (std::sregex_iterator it(code.begin(), code.end(), pattern), end; it != end; ++it) ++n;
    return n;
}

#ifdef PROBE_MAIN
int main() { std::printf("standalone: %d includes (want 2)\n", count_includes("#include <a>\n# include \"b.h\"\n")); }
#endif
