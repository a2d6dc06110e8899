#include "devices/cpu/cpu_compiler.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <kiln/error.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "devices/cpu/temporary_directory.h"

extern char** environ;

namespace kiln::cpu {
namespace {

// -fwrapv: integer overflow wraps (kiln's documented semantics). -ffp-contract=off: no fused
// multiply-add, so results match other devices. -fopenmp-simd: honours the renderer's
// reduction pragma without OpenMP's runtime. -fno-trapping-math: lets the compiler turn the
// NaN-aware selects (max, where) into branch-free code; kiln never reads FP exception flags.
// -mincoming-stack-boundary=3: GCC 12 lays out an `omp simd` reduction's lane array in the red
// zone 8 bytes off its 16-byte alignment where a 4-term float sum reads float64 terms (the
// vectorized array is dead, so no realignment is kept, but its aligned store is): the kernel
// dies on that store. Assuming an 8-byte-aligned incoming stack makes GCC realign the frame
// whenever it stores an aligned vector there (one `and` on entry where it does).
const std::vector<std::string> kFlags = {"-O2",
                                         "-march=native",
                                         "-mincoming-stack-boundary=3",
                                         "-fPIC",
                                         "-shared",
                                         "-fwrapv",
                                         "-fno-strict-aliasing",
                                         "-ffp-contract=off",
                                         "-fopenmp-simd",
                                         "-fno-math-errno",
                                         "-fno-trapping-math",
                                         "-std=gnu99",
                                         "-x",
                                         "c"};

// libmvec holds the vector variants the C dialect declares for x86-64.
#if defined(__x86_64__)
const std::vector<std::string> kLibraries = {"-lmvec", "-lm"};
#else
const std::vector<std::string> kLibraries = {"-lm"};
#endif

struct RunResult {
  int status = -1;
  std::string output;
};

// Runs a command (no shell), capturing stdout and stderr together.
RunResult run_command(const std::vector<std::string>& words, const std::string& output_path) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, output_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  std::vector<char*> argv;
  for (const std::string& word : words) argv.push_back(const_cast<char*>(word.c_str()));
  argv.push_back(nullptr);
  pid_t child = 0;
  RunResult result;
  const int spawned = posix_spawnp(&child, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    result.output = std::string("cannot run ") + words[0] + ": " + std::strerror(spawned);
    return result;
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream log(output_path);
  std::stringstream text;
  text << log.rdbuf();
  result.output = text.str();
  return result;
}

std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown cpu";
}

std::string joined(const std::vector<std::string>& words) {
  std::string text;
  for (const std::string& word : words) text += (text.empty() ? "" : " ") + word;
  return text;
}

// The file posix_spawnp would run for `program`: a name without a slash is looked up on PATH.
// Symlinks are resolved, so `cc` names the compiler it stands for. Empty when not found.
std::string resolve_program(const std::string& program) {
  namespace fs = std::filesystem;
  std::vector<std::string> candidates;
  if (program.find('/') != std::string::npos) {
    candidates.push_back(program);
  } else {
    const char* path = std::getenv("PATH");
    std::stringstream folders(path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
    std::string folder;
    while (std::getline(folders, folder, ':'))
      candidates.push_back((folder.empty() ? std::string(".") : folder) + "/" + program);
  }
  for (const std::string& candidate : candidates) {
    std::error_code error;
    if (::access(candidate.c_str(), X_OK) != 0 || !fs::is_regular_file(candidate, error)) continue;
    const fs::path resolved = fs::canonical(candidate, error);
    return error ? candidate : resolved.string();
  }
  return "";
}

// KILN_CC as this process found it, and what the compiler says it is. Computed once per process:
// the probe and the compiler share it, and the environment is read once.
struct ConfiguredCompiler {
  std::vector<std::string> command;  // the words of KILN_CC, or "cc"
  std::string resolved_path;         // the program command[0] runs
  RunResult version;                 // `command --version`
};

const ConfiguredCompiler& configured_compiler() {
  static const ConfiguredCompiler configured = [] {
    ConfiguredCompiler found;
    const char* variable = std::getenv("KILN_CC");
    std::stringstream stream(variable && *variable ? variable : "cc");
    std::string word;
    while (stream >> word) found.command.push_back(word);
    if (found.command.empty()) found.command.push_back("cc");
    found.resolved_path = resolve_program(found.command[0]);
    TemporaryDirectory scratch("cc");
    std::vector<std::string> version = found.command;
    version.push_back("--version");
    found.version = run_command(version, scratch.path() + "/version.txt");
    return found;
  }();
  return configured;
}

// Everything besides the source that decides the binary, for the disk cache key: every word of
// KILN_CC (flags there change the code: -ffast-math breaks NaN handling), which program the
// command runs and its whole version text (a `cc` upgraded or re-pointed), the CPU that
// -march=native targets, and kiln's own flags. The first part, up to " | ", is the compiler's
// version line, which `kiln devices` shows as the driver.
std::string compiler_identity() {
  const ConfiguredCompiler& compiler = configured_compiler();
  const std::string& version = compiler.version.output;
  std::string identity = version.substr(0, version.find('\n')) + " | " + cpu_model();
  identity += " | command: " + joined(compiler.command);
  identity += " | program: " + compiler.resolved_path;
  identity += " | flags: " + joined(kFlags) + " " + joined(kLibraries);
  identity += " | version: " + version;
  return identity;
}

// Why `bytes` is not a shared object for dlopen, or "" when it looks like one.
std::string shared_object_problem(const std::vector<uint8_t>& bytes) {
  if (bytes.empty()) return "the file is empty";
  if (bytes.size() < sizeof(ElfW(Ehdr)) || std::memcmp(bytes.data(), ELFMAG, SELFMAG) != 0)
    return std::to_string(bytes.size()) + " bytes without an ELF header";
  ElfW(Ehdr) header;
  std::memcpy(&header, bytes.data(), sizeof(header));
  if (header.e_type != ET_DYN)
    return "an ELF file of type " + std::to_string(header.e_type) + ", not a shared object (" +
           std::to_string(ET_DYN) + ")";
  return "";
}

class CCompiler : public Compiler {
 public:
  CCompiler() : identity_(compiler_identity()) {}

  std::string identity() const override { return identity_; }

  std::vector<uint8_t> compile(const std::string& source, const std::string& kernel_name) override {
    TemporaryDirectory scratch("cc");
    const std::string source_path = scratch.path() + "/" + kernel_name + ".c";
    const std::string object_path = scratch.path() + "/" + kernel_name + ".so";
    {
      std::ofstream file(source_path);
      file << source;
    }
    std::vector<std::string> words = compiler_command();
    words.insert(words.end(), kFlags.begin(), kFlags.end());
    words.insert(words.end(), {source_path, "-o", object_path});
    words.insert(words.end(), kLibraries.begin(), kLibraries.end());
    const RunResult result = run_command(words, scratch.path() + "/log.txt");
    if (result.status != 0) {
      throw CompileError("[cpu] compiling kernel " + kernel_name + " failed (exit " +
                             std::to_string(result.status) + "): " + joined(words),
                         result.output, source);
    }
    std::ifstream object(object_path, std::ios::binary);
    const bool written = object.is_open();
    std::vector<uint8_t> binary(std::istreambuf_iterator<char>(object),
                                (std::istreambuf_iterator<char>()));
    // A compiler that exits 0 without writing the object (KILN_CC=true, a wrapper that swallows
    // -o) is the compiler's failure, not dlopen's: say so here, before anything is cached.
    const std::string problem = written ? shared_object_problem(binary) : "no file was written";
    if (!problem.empty()) {
      throw CompileError("[cpu] compiling kernel " + kernel_name +
                             ": the compiler exited 0 but produced no valid shared object at " +
                             object_path + " (" + problem + "); command: " + joined(words),
                         result.output, source);
    }
    return binary;
  }

 private:
  std::string identity_;
};

}  // namespace

std::vector<std::string> compiler_command() {
  return configured_compiler().command;
}

std::string compiler_problem() {
  const ConfiguredCompiler& compiler = configured_compiler();
  if (compiler.version.status == 0) return "";
  return "C compiler '" + compiler.command[0] + "' does not run (" +
         compiler.version.output.substr(0, 200) + "); install gcc or set KILN_CC";
}

std::unique_ptr<Compiler> make_c_compiler() {
  return std::make_unique<CCompiler>();
}

}  // namespace kiln::cpu
