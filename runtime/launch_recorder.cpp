#include "runtime/launch_recorder.h"

namespace kiln {
namespace {

thread_local LaunchRecorder* current = nullptr;

}  // namespace

LaunchRecorder* active_recorder() {
  return current;
}

RecordingScope::RecordingScope(LaunchRecorder& recorder) : previous_(current) {
  current = &recorder;
}

RecordingScope::~RecordingScope() {
  current = previous_;
}

}  // namespace kiln
