#include "runtime/trace.h"

#include <cstdlib>
#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace kiln {
namespace {

struct Event {
  std::string name;
  const char* category;
  double start_us;
  double duration_us;
  std::string detail;
  size_t thread;
};

class TraceWriter {
 public:
  explicit TraceWriter(std::string path)
      : path_(std::move(path)), origin_(std::chrono::steady_clock::now()) {}
  ~TraceWriter() { write(); }

  void add(Event event) {
    std::lock_guard<std::mutex> lock(mutex_);
    events_.push_back(std::move(event));
  }
  std::chrono::steady_clock::time_point origin() const { return origin_; }

 private:
  void write() {
    std::ofstream file(path_);
    // One event at a time, so that a long trace is never held twice in memory. Names and details
    // quote kernels' source, which need not be UTF-8: replaced, not an exception at exit.
    file << "{\"traceEvents\":[\n";
    for (size_t index = 0; index < events_.size(); ++index) {
      const Event& event = events_[index];
      const nlohmann::ordered_json json = {{"name", event.name},
                                           {"cat", event.category},
                                           {"ph", "X"},
                                           {"ts", event.start_us},
                                           {"dur", event.duration_us},
                                           {"pid", 1},
                                           {"tid", event.thread},
                                           {"args", {{"detail", event.detail}}}};
      file << (index ? ",\n" : "")
           << json.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    }
    file << "\n]}\n";
  }

  std::string path_;
  std::chrono::steady_clock::time_point origin_;
  std::mutex mutex_;
  std::vector<Event> events_;
};

TraceWriter* writer() {
  // A static object: its destructor writes the file when the process exits normally.
  static std::unique_ptr<TraceWriter> instance = [] {
    const char* path = std::getenv("KILN_TRACE");
    return path && *path ? std::make_unique<TraceWriter>(path) : nullptr;
  }();
  return instance.get();
}

}  // namespace

bool tracing_enabled() {
  return writer() != nullptr;
}

void trace_event(const std::string& name, const char* category,
                 std::chrono::steady_clock::time_point start, double seconds,
                 const std::string& detail) {
  TraceWriter* trace = writer();
  if (!trace) return;
  const double start_us =
      std::chrono::duration<double, std::micro>(start - trace->origin()).count();
  trace->add({name, category, start_us, seconds * 1e6, detail,
              std::hash<std::thread::id>()(std::this_thread::get_id()) % 1000});
}

}  // namespace kiln
