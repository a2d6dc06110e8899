#include "runtime/registry.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>

#include <kiln/error.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>

#include "runtime/debug.h"
#include "runtime/plugin.h"

namespace kiln {
namespace {

struct LoadedPlugin {
  const PluginEntry* entry = nullptr;
  ProbeResult probe;
  std::string path;
};

struct Registry {
  std::mutex mutex;
  std::vector<LoadedPlugin> plugins;
  std::vector<DeviceRecord> records;
  std::map<std::string, std::shared_ptr<DeviceContext>> open;
};

// The folder that holds libkiln itself.
std::string library_directory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&library_directory), &info) && info.dli_fname) {
    return std::filesystem::path(info.dli_fname).parent_path().string();
  }
  return ".";
}

std::vector<std::string> plugin_directories() {
  std::vector<std::string> folders;
  if (const char* extra = std::getenv("KILN_PLUGIN_PATH"); extra && *extra) {
    std::stringstream list(extra);
    std::string folder;
    while (std::getline(list, folder, ':')) {
      if (!folder.empty()) folders.push_back(folder);
    }
  }
  folders.push_back(library_directory());
  return folders;
}

std::vector<std::string> plugin_files() {
  std::vector<std::string> files;
  for (const std::string& folder : plugin_directories()) {
    std::error_code error;
    std::vector<std::string> found;
    for (const auto& entry : std::filesystem::directory_iterator(folder, error)) {
      const std::string file = entry.path().filename().string();
      if (file.rfind("libkiln_device_", 0) == 0 && entry.path().extension() == ".so") {
        found.push_back(entry.path().string());
      }
    }
    std::sort(found.begin(), found.end());
    files.insert(files.end(), found.begin(), found.end());
  }
  return files;
}

// "libkiln_device_opencl.so" -> "OPENCL": the name a plugin that fails to load is listed under.
std::string device_name_of_file(const std::string& file) {
  std::string name = file.substr(std::string("libkiln_device_").size());
  name = name.substr(0, name.find('.'));
  for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return name;
}

// The ELF header of `path`, when the file holds one.
std::optional<ElfW(Ehdr)> read_elf_header(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  ElfW(Ehdr) header{};
  if (!file.read(reinterpret_cast<char*>(&header), sizeof(header))) return std::nullopt;
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0) return std::nullopt;
  return header;
}

// Why `path` cannot be a plugin for this process, or nothing when it may be dlopened. dlopen maps
// each segment the program headers name without checking that the file holds it, and a page
// past the end of a truncated file is a SIGBUS on first touch, inside dlopen, that no error
// return can report; so the file is checked first: an ELF shared object of this process's class,
// byte order and machine (those of libkiln itself), whose segments all lie inside the file.
std::optional<std::string> plugin_file_problem(const std::string& path) {
  std::error_code error;
  const uintmax_t file_size = std::filesystem::file_size(path, error);
  if (error) return "cannot read the file: " + error.message();
  const std::optional<ElfW(Ehdr)> header = read_elf_header(path);
  if (!header) return "not a shared object (no ELF header)";
  Dl_info self{};
  if (dladdr(reinterpret_cast<const void*>(&read_elf_header), &self) && self.dli_fname) {
    if (const std::optional<ElfW(Ehdr)> own = read_elf_header(self.dli_fname)) {
      if (header->e_ident[EI_CLASS] != own->e_ident[EI_CLASS] ||
          header->e_ident[EI_DATA] != own->e_ident[EI_DATA] || header->e_machine != own->e_machine)
        return "an ELF file for another machine or word size (machine " +
               std::to_string(header->e_machine) + ", class " +
               std::to_string(header->e_ident[EI_CLASS]) + "; this process: machine " +
               std::to_string(own->e_machine) + ", class " +
               std::to_string(own->e_ident[EI_CLASS]) + ")";
    }
  }
  if (header->e_type != ET_DYN) return "an ELF file that is not a shared object";
  if (header->e_phentsize != sizeof(ElfW(Phdr)) || header->e_phnum == 0)
    return "a malformed ELF file (no program headers)";
  const uintmax_t headers_end =
      uintmax_t{header->e_phoff} + uintmax_t{header->e_phnum} * sizeof(ElfW(Phdr));
  if (headers_end > file_size)
    return "a truncated ELF file (" + std::to_string(file_size) +
           " bytes; its program headers end at byte " + std::to_string(headers_end) + ")";
  std::ifstream file(path, std::ios::binary);
  file.seekg(static_cast<std::streamoff>(header->e_phoff));
  for (int index = 0; index < header->e_phnum; ++index) {
    ElfW(Phdr) segment{};
    if (!file.read(reinterpret_cast<char*>(&segment), sizeof(segment)))
      return "cannot read the file's program headers";
    if (segment.p_type != PT_LOAD) continue;
    const uintmax_t end = uintmax_t{segment.p_offset} + uintmax_t{segment.p_filesz};
    if (end < segment.p_offset || end > file_size)
      return "a truncated ELF file (" + std::to_string(file_size) + " bytes; segment " +
             std::to_string(index) + " ends at byte " + std::to_string(end) +
             "): copied or written only in part? Install it again";
  }
  return std::nullopt;
}

// Why the plugin's table cannot be used, or nothing. The registry calls through every one of
// these pointers; a null one would be a SIGSEGV in every program that loads kiln.
std::optional<std::string> plugin_entry_problem(const PluginEntry& entry) {
  if (!entry.name || !*entry.name) return std::string("its table has no device name");
  if (!entry.probe) return std::string("its table has no probe function");
  if (!entry.create) return std::string("its table has no create function");
  return std::nullopt;  // create_compile_only is optional: null where there is none
}

void load_plugin(Registry& registry, const std::string& path) {
  const std::string file = std::filesystem::path(path).filename().string();
  auto fail = [&](const std::string& reason) {
    DeviceRecord record;
    record.name = device_name_of_file(file);
    record.reason = reason;
    record.plugin_path = path;
    registry.records.push_back(record);
    if (debug_level() >= 1) logger().info("plugin {} skipped: {}", path, reason);
  };
  if (const std::optional<std::string> problem = plugin_file_problem(path))
    return fail("failed to load: " + *problem);
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) return fail(std::string("failed to load: ") + dlerror());
  using EntryFunction = const PluginEntry* (*)();
  auto entry_function = reinterpret_cast<EntryFunction>(dlsym(handle, KILN_PLUGIN_ENTRY_SYMBOL));
  if (!entry_function) return fail("not a kiln plugin: no kiln_plugin_entry symbol");
  const PluginEntry* entry = entry_function();
  if (!entry || entry->abi_version != kPluginAbiVersion) {
    return fail("plugin ABI version " + std::to_string(entry ? entry->abi_version : 0) +
                " does not match kiln's " + std::to_string(kPluginAbiVersion));
  }
  if (entry->layout != plugin_layout_fingerprint()) {
    return fail("plugin built against other kiln headers or another C++ standard library " +
                std::string("(layout fingerprint ") + std::to_string(entry->layout) + ", kiln's " +
                std::to_string(plugin_layout_fingerprint()) + "): rebuild it");
  }
  if (const std::optional<std::string> problem = plugin_entry_problem(*entry))
    return fail("unusable plugin: " + *problem);
  // A plugin found twice (KILN_PLUGIN_PATH and beside libkiln): the first one wins.
  for (const LoadedPlugin& loaded : registry.plugins) {
    if (std::string(loaded.entry->name) == entry->name) return;
  }
  LoadedPlugin loaded;
  loaded.entry = entry;
  loaded.path = path;
  try {
    loaded.probe = entry->probe();
  } catch (const std::exception& error) {
    loaded.probe.device_count = 0;
    loaded.probe.reason = std::string("probe failed: ") + error.what();
  }
  registry.plugins.push_back(loaded);
  if (loaded.probe.device_count == 0) {
    DeviceRecord record;
    record.name = entry->name;
    record.reason = loaded.probe.reason;
    record.plugin_path = path;
    registry.records.push_back(record);
    return;
  }
  for (int index = 0; index < loaded.probe.device_count; ++index) {
    DeviceRecord record;
    record.name = index == 0 ? std::string(entry->name)
                             : std::string(entry->name) + ":" + std::to_string(index);
    record.available = true;
    record.is_gpu = loaded.probe.is_gpu;
    record.reason = loaded.probe.reason;
    record.plugin_path = path;
    registry.records.push_back(record);
  }
}

Registry& registry() {
  static Registry* instance = [] {
    debug_level();  // junk in KILN_DEBUG is an Error here, before any plugin is loaded
    auto* created = new Registry();  // lives for the process: plugins are never unloaded
    for (const std::string& path : plugin_files()) load_plugin(*created, path);
    return created;
  }();
  return *instance;
}

std::string describe_devices(const Registry& state) {
  std::string available, unavailable;
  for (const DeviceRecord& record : state.records) {
    if (record.available) {
      available += (available.empty() ? "" : ", ") + record.name;
    } else {
      unavailable += "\n  " + record.name + ": " + record.reason;
    }
  }
  std::string text = "available devices: " + (available.empty() ? std::string("none") : available);
  if (!unavailable.empty()) text += "; unavailable:" + unavailable;
  if (state.records.empty()) {
    text += " (no plugin found in: ";
    for (const std::string& folder : plugin_directories()) text += folder + " ";
    text += ")";
  }
  return text;
}

}  // namespace

// The one grammar of device names, so that a typo is never read as some device: NAME (letters,
// digits and _, starting with a letter; any case), NAME:N (N a decimal index without leading
// zeros; NAME:0 is NAME) or NAME@TARGET (a compile-only device; TARGET letters, digits and _,
// such as sm_90). Anything else is a DeviceError listing the valid forms.
std::string canonical_device_name(const std::string& name) {
  auto is_word = [](const std::string& text) {
    return !text.empty() && std::all_of(text.begin(), text.end(), [](unsigned char c) {
      return std::isalnum(c) != 0 || c == '_';
    });
  };
  const size_t at = name.find('@');
  const size_t colon = name.find(':');
  const std::string base = name.substr(0, std::min(at, colon));
  bool valid = is_word(base) && std::isalpha(static_cast<unsigned char>(base[0])) != 0;
  std::string index, target;
  if (valid && at != std::string::npos) {
    target = name.substr(at + 1);
    valid = colon == std::string::npos && is_word(target);
  } else if (valid && colon != std::string::npos) {
    index = name.substr(colon + 1);
    valid = !index.empty() && std::all_of(index.begin(), index.end(), [](unsigned char c) {
      return std::isdigit(c) != 0;
    }) && (index == "0" || index[0] != '0');
  }
  if (!valid) {
    Registry& state = registry();
    std::lock_guard<std::mutex> lock(state.mutex);
    throw DeviceError("[device] '" + name +
                      "' is not a device name: use NAME (CPU, CL), NAME:N for the device of "
                      "index N (CL:1; a decimal number without leading zeros) or NAME@TARGET for "
                      "a compile-only device (CUDA@sm_90); " +
                      describe_devices(state));
  }
  std::string upper;
  for (char c : base) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (!index.empty() && index != "0") upper += ":" + index;
  if (at == std::string::npos) return upper;
  for (char& c : target) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return upper + "@" + target;
}

std::vector<DeviceRecord> device_records() {
  Registry& state = registry();
  std::lock_guard<std::mutex> lock(state.mutex);
  return state.records;
}

std::vector<std::shared_ptr<DeviceContext>> open_devices() {
  Registry& state = registry();
  std::lock_guard<std::mutex> lock(state.mutex);
  std::vector<std::shared_ptr<DeviceContext>> contexts;
  for (const auto& [name, context] : state.open) {
    if (std::find(contexts.begin(), contexts.end(), context) == contexts.end())
      contexts.push_back(context);
  }
  return contexts;
}

namespace {

// open_device without the thread's last answer.
std::shared_ptr<DeviceContext> open_device_uncached(const std::string& requested) {
  Registry& state = registry();
  const std::string name = canonical_device_name(requested);
  std::lock_guard<std::mutex> lock(state.mutex);
  auto open = state.open.find(name);
  if (open != state.open.end()) return open->second;

  if (const size_t at = name.find('@'); at != std::string::npos) {
    const std::string prefix = name.substr(0, at);
    for (const LoadedPlugin& plugin : state.plugins) {
      if (plugin.entry->name != prefix) continue;
      if (!plugin.entry->create_compile_only) {
        throw DeviceError("[device] '" + requested + "': the " + prefix +
                          " plugin has no compile-only devices (NAME@TARGET)");
      }
      auto context =
          std::make_shared<DeviceContext>(plugin.entry->create_compile_only(name.substr(at + 1)));
      state.open[name] = context;
      state.open[canonical_device_name(context->name())] = context;  // sm_90 for compute_90
      return context;
    }
    throw DeviceError("[device] unknown device '" + requested + "' (no " + prefix + " plugin); " +
                      describe_devices(state));
  }
  const std::string prefix = name.substr(0, name.find(':'));
  // Empty: an index too large for an int, which no plugin has.
  std::optional<int> index = 0;
  if (name.find(':') != std::string::npos) {
    const std::string number = name.substr(name.find(':') + 1);
    const bool digits = std::all_of(number.begin(), number.end(),
                                    [](unsigned char c) { return std::isdigit(c) != 0; });
    if (number.empty() || !digits) {
      throw DeviceError("[device] '" + requested + "' is not a device name (NAME or NAME:INDEX); " +
                        describe_devices(state));
    }
    int parsed = 0;
    const auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), parsed);
    index = error == std::errc() ? std::optional<int>(parsed) : std::nullopt;
  }
  for (const LoadedPlugin& plugin : state.plugins) {
    if (plugin.entry->name != prefix) continue;
    if (plugin.probe.device_count == 0) {
      throw DeviceError("[device] " + requested + " is unavailable: " + plugin.probe.reason + "; " +
                        describe_devices(state));
    }
    if (!index || *index >= plugin.probe.device_count) {
      throw DeviceError("[device] " + requested + " does not exist: the " + prefix +
                        " plugin found " + std::to_string(plugin.probe.device_count) +
                        " device(s); " + describe_devices(state));
    }
    std::unique_ptr<Device> device = plugin.entry->create(*index);
    auto context = std::make_shared<DeviceContext>(std::move(device));
    state.open[name] = context;
    return context;
  }
  for (const DeviceRecord& record : state.records) {
    if (record.name == prefix && !record.available) {
      throw DeviceError("[device] " + requested + " is unavailable: " + record.reason + " (" +
                        record.plugin_path + "); " + describe_devices(state));
    }
  }
  throw DeviceError("[device] unknown device '" + requested + "'; " + describe_devices(state));
}

}  // namespace

std::shared_ptr<DeviceContext> open_device(const std::string& requested) {
  // Every realize opens its device: a thread keeps its last answer, so that threads realizing at
  // once do not meet on the registry's lock. An open device stays open for the process.
  thread_local std::string last_requested;
  thread_local std::shared_ptr<DeviceContext> last_context;
  if (last_context && requested == last_requested) return last_context;
  std::shared_ptr<DeviceContext> context = open_device_uncached(requested);
  last_requested = requested;
  last_context = context;
  return context;
}

std::vector<std::string> devices() {
  std::vector<std::string> names;
  for (const DeviceRecord& record : device_records()) {
    if (record.available) names.push_back(record.name);
  }
  return names;
}

std::string default_device() {
  static const std::string chosen = [] {
    if (const char* requested = std::getenv("KILN_DEVICE"); requested && *requested) {
      const std::string name = canonical_device_name(requested);
      open_device(name);  // throws with the reason when it can't run here
      return name;
    }
    const std::vector<DeviceRecord> records = device_records();
    for (const DeviceRecord& record : records) {
      if (record.available && record.is_gpu) return record.name;
    }
    open_device("CPU");  // throws, saying why, when not even the CPU can run
    return std::string("CPU");
  }();
  return chosen;
}

void synchronize(const std::string& device) {
  open_device(device.empty() ? default_device() : device)->device().synchronize();
}

NativeDevice native_device(const std::string& device) {
  return open_device(device.empty() ? default_device() : device)->device().native_handles();
}

}  // namespace kiln
