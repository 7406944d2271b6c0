// pxl-report: a session's report directory, or two side by side, as one self-contained HTML
// page (pxl::report::write_html).
#include <pxl/core/error.hpp>
#include <pxl/report.hpp>

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace {

constexpr const char* usage =
    "usage: pxl-report DIR [DIR2] [-o FILE]\n"
    "Writes one HTML page (default: report.html) showing the report directory DIR that a\n"
    "session wrote with POPLAR_ENGINE_OPTIONS='{\"autoReport.all\":\"true\"}', or DIR and\n"
    "DIR2 side by side. The page needs no network: Chart.js (Debian's libjs-chart.js) is\n"
    "inlined. Options:\n"
    "  -o, --output FILE  the page to write (default report.html)\n"
    "  -h, --help         this text\n";

} // namespace

int main(int argc, char** argv) {
  std::vector<std::string> dirs;
  std::string out = "report.html";
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::fputs(usage, stdout);
      return 0;
    }
    if (arg == "-o" || arg == "--output") {
      if (i + 1 == argc) {
        std::fprintf(stderr, "pxl-report: %s needs a file name\n%s", argv[i], usage);
        return 2;
      }
      out = argv[++i];
    } else if (arg.starts_with("-")) {
      std::fprintf(stderr, "pxl-report: unknown option '%s'\n%s", argv[i], usage);
      return 2;
    } else {
      dirs.emplace_back(arg);
    }
  }
  if (dirs.empty() || dirs.size() > 2) {
    std::fprintf(stderr, "pxl-report: expected one report directory or two, found %zu\n%s",
                 dirs.size(), usage);
    return 2;
  }
  try {
    pxl::report::write_html(dirs, out);
  } catch (const pxl::Error& e) {
    std::fprintf(stderr, "pxl-report: %s\n", e.what());
    return 1;
  }
  std::printf("pxl-report: wrote %s\n", out.c_str());
  return 0;
}
