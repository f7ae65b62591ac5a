// `rocplay kernel-info FILE...`: AMDGPU code objects read offline (ELF, offload bundles, files
// saved by rocm-debug-agent, code-object URIs): each kernel's registers, LDS, scratch and spills,
// its ISA fit per architecture, and with --pc the instructions around an address.
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "rocplay/codeobj/fit.hpp"
#include "rocplay/codeobj/kernel_info.hpp"
#include "rocplay/core/error.hpp"
#include "rocplay/report/kernel_report.hpp"

#include <memory>
#include <optional>
#include <sstream>

namespace rocplay::cli::kernel_info_command {
namespace {

struct Options {
  std::vector<std::string> inputs;
  std::string kernel;
  std::string pc;
  std::vector<std::string> archs;
  unsigned workgroup_size = 0;
  std::string code_objects;
  std::string format = "text";
  std::string output;
  std::size_t before = 16;
  std::size_t after = 16;
  bool verbose = false;
};

std::uint64_t parse_address(const std::string& text) {
  std::string s = text;
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    s = s.substr(2);
    base = 16;
  }
  std::size_t used = 0;
  std::uint64_t v = 0;
  try {
    v = std::stoull(s, &used, base);
  } catch (const std::exception&) {
    used = 0;
  }
  if (s.empty() || used != s.size()) {
    throw Error(ExitCode::Usage, "--pc " + text + " is not an address",
                "give it in hex (0x1f40) or decimal, as an offset into the code object");
  }
  return v;
}

int run_kernel_info(const Options& options) {
  if (options.format != "text" && options.format != "json") {
    throw Error(ExitCode::Usage, "--format " + options.format + " is not one kernel-info writes",
                "use --format text or --format json");
  }
  codeobj::KernelInfoRequest request;
  request.inputs = options.inputs;
  request.saved_dir = options.code_objects;
  request.kernel = options.kernel;
  request.before = std::min<std::size_t>(options.before, 4096);
  request.after = std::min<std::size_t>(options.after, 4096);
  for (const auto& list : options.archs) {
    std::stringstream ss(list);
    std::string arch;
    while (std::getline(ss, arch, ',')) {
      if (arch.empty()) {
        continue;
      }
      if (codeobj::arch_limits(arch) == nullptr) {
        std::string names;
        for (const auto& n : codeobj::fit_arch_names()) {
          names += (names.empty() ? "" : ", ") + n;
        }
        throw Error(ExitCode::Usage, "--arch " + arch + ": rocplay has no fit limits for it",
                    "use one of " + names);
      }
      request.archs.push_back(arch);
    }
  }
  if (options.workgroup_size > 0) {
    if (options.workgroup_size > 1024) {
      throw Error(ExitCode::Usage,
                  "--workgroup-size " + std::to_string(options.workgroup_size) +
                      " is over 1024, the most work-items a workgroup may have",
                  "give the launch's blockDim.x * blockDim.y * blockDim.z");
    }
    request.workgroup_size = options.workgroup_size;
  }
  if (!options.pc.empty()) {
    request.pc = parse_address(options.pc);
  }

  const auto info = codeobj::kernel_info(request);

  OutputFile output(options.output);
  auto& out = output.stream();
  if (options.format == "json") {
    report::write_kernel_info_json(out, info);
  } else {
    report::write_kernel_info_text(out, info, options.verbose);
  }
  output.commit();
  if (options.format == "json") {
    for (const auto& p : info.problems) {
      print_error(p.message, p.hint);
    }
  }
  if (info.objects.empty()) {
    throw Error(ExitCode::NoInput, "no code object could be read from the inputs",
                "pass .hsaco/.co files, offload bundles, HIP executables, or files saved by "
                "rocm-debug-agent --save-code-objects");
  }
  if (!options.kernel.empty() && info.kernels.empty()) {
    throw Error(ExitCode::NoInput, "no kernel matches --kernel " + options.kernel,
                "run without --kernel to list the kernels");
  }
  return static_cast<int>(info.problems.empty() ? ExitCode::Ok : ExitCode::PartialInput);
}

Action add_kernel_info(CLI::App& app) {
  auto options = std::make_shared<Options>();
  auto* sub = app.add_subcommand(
      "kernel-info", "AMDGPU code objects: each kernel's registers, LDS, spills and ISA fit");
  sub->footer(
      "Reads code objects (ELF), clang offload bundles, HIP executables that embed them, files\n"
      "saved by rocm-debug-agent --save-code-objects, and file:// or memory:// URIs (memory://\n"
      "ones from --code-objects DIR). The fit is an ISA fit from the metadata, not measured\n"
      "occupancy. Exit: 0 read, 2 some inputs unreadable, 66 none readable. Docs:\n"
      "docs/code-objects.md.");
  sub->add_option("inputs", options->inputs, "Code objects, bundles or code-object URIs")
      ->required();
  sub->add_option("--kernel,-k", options->kernel, "Only kernels whose name is or contains this");
  sub->add_option("--pc", options->pc,
                  "Disassemble around this address (an offset into the code object), marking the "
                  "loop that holds it");
  sub->add_option("--arch", options->archs,
                  "Fit to these architectures (gfx90a,gfx942,gfx950,gfx1030,gfx11,gfx12); "
                  "default: the object's own")
      ->delimiter(',');
  sub->add_option("--workgroup-size", options->workgroup_size,
                  "Work-items per workgroup of the launch (default: max_flat_workgroup_size)");
  sub->add_option("--code-objects", options->code_objects,
                  "Directory of objects saved by rocm-debug-agent, for memory:// URIs");
  sub->add_option("--before", options->before, "Instructions shown before --pc")
      ->capture_default_str();
  sub->add_option("--after", options->after, "Instructions shown from --pc on")
      ->capture_default_str();
  sub->add_option("--format,-f", options->format, "text or json")->capture_default_str();
  sub->add_option("--output,-o", options->output, "Write the report here instead of stdout");
  sub->add_flag("--verbose,-v", options->verbose,
                "Addresses, descriptor registers, caveats and the decoder used");
  return [options] { return run_kernel_info(*options); };
}

const bool kRegistered = register_command({"kernel-info", 35, &add_kernel_info});

} // namespace
} // namespace rocplay::cli::kernel_info_command
