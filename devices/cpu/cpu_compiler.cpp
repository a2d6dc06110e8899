#include "devices/cpu/cpu_compiler.h"

#include <fcntl.h>
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

extern char** environ;

namespace kiln::cpu {
namespace {

// -fwrapv: integer overflow wraps (kiln's documented semantics). -ffp-contract=off: no fused
// multiply-add, so results match other devices. -fopenmp-simd: honours the renderer's
// reduction pragma without OpenMP's runtime. -fno-trapping-math: lets the compiler turn the
// NaN-aware selects (max, where) into branch-free code; kiln never reads FP exception flags.
const std::vector<std::string> kFlags = {"-O2",
                                         "-march=native",
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

class TemporaryDirectory {
 public:
  TemporaryDirectory() {
    std::string pattern = (std::filesystem::temp_directory_path() / "kiln-cc-XXXXXX").string();
    if (!mkdtemp(pattern.data()))
      throw DeviceError(std::string("[cpu] mkdtemp failed: ") + std::strerror(errno));
    path_ = pattern;
  }
  ~TemporaryDirectory() {
    std::error_code error;
    std::filesystem::remove_all(path_, error);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown cpu";
}

class CCompiler : public Compiler {
 public:
  CCompiler() {
    TemporaryDirectory scratch;
    std::vector<std::string> version = compiler_command();
    version.push_back("--version");
    const RunResult result = run_command(version, scratch.path() + "/version.txt");
    const std::string first_line = result.output.substr(0, result.output.find('\n'));
    identity_ = first_line + " | " + cpu_model();
    for (const std::string& flag : kFlags) identity_ += " " + flag;
    for (const std::string& library : kLibraries) identity_ += " " + library;
  }

  std::string identity() const override { return identity_; }

  std::vector<uint8_t> compile(const std::string& source, const std::string& kernel_name) override {
    TemporaryDirectory scratch;
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
                             std::to_string(result.status) + ")",
                         result.output, source);
    }
    std::ifstream object(object_path, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(object),
                                std::istreambuf_iterator<char>());
  }

 private:
  std::string identity_;
};

}  // namespace

std::vector<std::string> compiler_command() {
  std::vector<std::string> words;
  const char* configured = std::getenv("KILN_CC");
  std::stringstream stream(configured && *configured ? configured : "cc");
  std::string word;
  while (stream >> word) words.push_back(word);
  return words;
}

std::string compiler_problem() {
  TemporaryDirectory scratch;
  std::vector<std::string> words = compiler_command();
  words.push_back("--version");
  const RunResult result = run_command(words, scratch.path() + "/probe.txt");
  if (result.status == 0) return "";
  return "C compiler '" + compiler_command()[0] + "' does not run (" +
         result.output.substr(0, 200) + "); install gcc or set KILN_CC";
}

std::unique_ptr<Compiler> make_c_compiler() {
  return std::make_unique<CCompiler>();
}

}  // namespace kiln::cpu
