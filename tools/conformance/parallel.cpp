#include "tools/conformance/parallel.h"

#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <kiln/error.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "runtime/registry.h"
#include "tools/conformance/runner.h"

extern char** environ;

namespace kiln::conformance {
namespace {

// Protocol lines start with a marker, so that anything else a worker prints is ignored.
constexpr const char* kMarker = "@@kiln-conformance";
// A worker's exit status when its device was lost after a case it reported: start another.
constexpr int kRestartStatus = 75;

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string unescape(const std::string& text) {
  std::string out;
  for (size_t index = 0; index < text.size(); ++index) {
    if (text[index] != '\\' || index + 1 == text.size()) {
      out += text[index];
      continue;
    }
    const char next = text[++index];
    out += next == 't' ? '\t' : next == 'n' ? '\n' : next;
  }
  return out;
}

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> fields;
  size_t start = 0;
  while (true) {
    const size_t tab = line.find('\t', start);
    fields.push_back(
        line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
    if (tab == std::string::npos) return fields;
    start = tab + 1;
  }
}

void write_line(const std::string& line) {
  const std::string text = std::string(kMarker) + "\t" + line + "\n";
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

struct Worker {
  int shard = 0;
  pid_t pid = -1;
  int fd = -1;
  std::string buffer;
  long running = -1;    // the case index it announced and has not finished
  long last_done = -1;  // the last case index it finished
  int restarts = 0;
  std::chrono::steady_clock::time_point case_started;  // when it announced `running`
  bool timed_out = false;  // killed by the parent for spending too long on `running`
};

bool spawn(Worker& worker, const std::string& device, const WorkerPlan& plan) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return false;
  std::vector<std::string> words = {plan.executable, "conformance", "--device", device};
  words.insert(words.end(), plan.select_args.begin(), plan.select_args.end());
  words.insert(words.end(),
               {"--worker", std::to_string(worker.shard) + "/" + std::to_string(plan.jobs),
                "--resume-after", std::to_string(worker.last_done)});
  std::vector<char*> argv;
  for (std::string& word : words) argv.push_back(word.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[1]);
  const int status =
      posix_spawn(&worker.pid, plan.executable.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_fds[1]);
  if (status != 0) {
    close(pipe_fds[0]);
    return false;
  }
  worker.fd = pipe_fds[0];
  worker.running = -1;
  worker.timed_out = false;
  return true;
}

}  // namespace

int worker_main(const std::string& device, const std::vector<const Case*>& cases, int shard,
                int count, long resume_after) {
  Runner runner(device);
  std::shared_ptr<DeviceContext> context = open_device(device);
  const int64_t compiles = context->stats().compiles, disk_hits = context->stats().disk_hits;
  for (size_t index = static_cast<size_t>(shard); index < cases.size();
       index += static_cast<size_t>(count)) {
    if (static_cast<long>(index) <= resume_after) continue;
    write_line("B\t" + std::to_string(index));
    CaseResult result = runner.run(*cases[index]);
    // Fault injection for kiln's tests: the named case behaves as if it lost the device.
    if (const char* lose = std::getenv("KILN_TEST_LOSE_DEVICE");
        lose && cases[index]->name == lose) {
      result.status = Status::Error;
      result.detail = "DeviceLostError: injected (KILN_TEST_LOSE_DEVICE)";
      result.device_lost = true;
    }
    char seconds[32];
    std::snprintf(seconds, sizeof(seconds), "%.6f", result.seconds);
    write_line("R\t" + std::to_string(index) + "\t" +
               std::to_string(static_cast<int>(result.status)) + "\t" + seconds + "\t" +
               std::to_string(result.worst_index) + "\t" + std::to_string(result.worst_ulps) +
               "\t" + escape(result.worst_at) + "\t" + escape(result.expected) + "\t" +
               escape(result.got) + "\t" + escape(result.detail) + "\t" +
               (result.guards_checked ? "1" : "0"));
    if (result.device_lost) {
      // Every later case would fail the same way: a fresh process resumes after this one.
      write_line("S\t" + std::to_string(context->stats().compiles - compiles) + "\t" +
                 std::to_string(context->stats().disk_hits - disk_hits));
      std::fflush(stdout);
      std::_Exit(kRestartStatus);
    }
  }
  write_line("S\t" + std::to_string(context->stats().compiles - compiles) + "\t" +
             std::to_string(context->stats().disk_hits - disk_hits));
  return 0;
}

DeviceRun run_in_workers(const std::string& device, const std::vector<const Case*>& cases,
                         const WorkerPlan& plan,
                         const std::function<void(size_t, const std::string&, size_t)>& on_result) {
  DeviceRun run;
  run.device = device;
  run.cases = cases;
  run.results.assign(cases.size(), CaseResult());
  std::vector<bool> done(cases.size(), false);
  size_t finished = 0, failures = 0;
  const auto start = std::chrono::steady_clock::now();
  std::vector<Worker> workers(static_cast<size_t>(plan.jobs));
  for (int shard = 0; shard < plan.jobs; ++shard) {
    workers[shard].shard = shard;
    if (!spawn(workers[shard], device, plan))
      throw Error("[conformance] cannot start a worker process: " +
                  std::string(std::strerror(errno)));
  }
  auto record = [&](size_t index, CaseResult result) {
    if (done[index]) return;
    done[index] = true;
    ++finished;
    failures += result.status == Status::Fail || result.status == Status::Error;
    run.results[index] = std::move(result);
    on_result(finished, cases[index]->name, failures);
  };
  auto handle_line = [&](Worker& worker, const std::string& line) {
    const std::vector<std::string> fields = split_tabs(line);
    if (fields.size() < 2 || fields[0] != kMarker) return;
    if (fields[1] == "B" && fields.size() >= 3) {
      worker.running = std::stol(fields[2]);
      worker.case_started = std::chrono::steady_clock::now();
    } else if (fields[1] == "R" && fields.size() >= 12) {
      CaseResult result;
      const size_t index = std::stoul(fields[2]);
      result.status = static_cast<Status>(std::stoi(fields[3]));
      result.seconds = std::stod(fields[4]);
      result.worst_index = std::stoll(fields[5]);
      result.worst_ulps = std::stod(fields[6]);
      result.worst_at = unescape(fields[7]);
      result.expected = unescape(fields[8]);
      result.got = unescape(fields[9]);
      result.detail = unescape(fields[10]);
      result.guards_checked = fields[11] == "1";
      worker.running = -1;
      worker.last_done = static_cast<long>(index);
      if (index < cases.size()) record(index, std::move(result));
    } else if (fields[1] == "S" && fields.size() >= 4) {
      run.compiles += std::stoll(fields[2]);
      run.disk_hits += std::stoll(fields[3]);
    }
  };
  size_t active = workers.size();
  while (active > 0) {
    std::vector<pollfd> fds;
    std::vector<Worker*> owners;
    for (Worker& worker : workers) {
      if (worker.fd < 0) continue;
      fds.push_back({worker.fd, POLLIN, 0});
      owners.push_back(&worker);
    }
    // With a case timeout, wake once a second to look for workers past it.
    if (poll(fds.data(), fds.size(), plan.case_timeout_seconds > 0 ? 1000 : -1) < 0) {
      if (errno == EINTR) continue;
      throw Error("[conformance] poll failed: " + std::string(std::strerror(errno)));
    }
    std::vector<const Worker*> heard;  // those whose output was read this round
    for (size_t slot = 0; slot < fds.size(); ++slot) {
      if (!(fds[slot].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Worker& worker = *owners[slot];
      heard.push_back(&worker);
      char chunk[65536];
      const ssize_t count = read(worker.fd, chunk, sizeof(chunk));
      if (count > 0) {
        worker.buffer.append(chunk, static_cast<size_t>(count));
        size_t newline;
        while ((newline = worker.buffer.find('\n')) != std::string::npos) {
          handle_line(worker, worker.buffer.substr(0, newline));
          worker.buffer.erase(0, newline + 1);
        }
        continue;
      }
      if (count < 0 && errno == EINTR) continue;
      // End of the worker's output: it finished, or it died.
      close(worker.fd);
      worker.fd = -1;
      int status = 0;
      while (waitpid(worker.pid, &status, 0) < 0 && errno == EINTR) {
      }
      const bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      if (clean) {
        --active;
        continue;
      }
      // Stopped just as it began a new case (its output crossed the kill): that case had no
      // time to run, so it runs again in the next process.
      if (worker.timed_out && worker.running >= 0 &&
          std::chrono::steady_clock::now() - worker.case_started <
              std::chrono::seconds(plan.case_timeout_seconds))
        worker.running = -1;
      if ((worker.timed_out || (WIFEXITED(status) && WEXITSTATUS(status) == kRestartStatus)) &&
          worker.running < 0) {
        // It lost its device after reporting a case, or was stopped between two cases: a new
        // process goes on from there.
        if (++worker.restarts <= 64 && spawn(worker, device, plan)) continue;
      }
      if (worker.running < 0 && worker.last_done >= 0) {
        // Every case it started has a result; it died on the way out (a driver's exit handler...).
        bool finished_shard = true;
        for (size_t index = static_cast<size_t>(worker.shard); index < cases.size();
             index += workers.size()) {
          finished_shard &= done[index];
        }
        if (finished_shard) {
          std::fprintf(
              stderr,
              "kiln conformance: warning: a worker process on %s died after its last case (%s)\n",
              device.c_str(),
              WIFSIGNALED(status) ? strsignal(WTERMSIG(status))
                                  : ("exit status " + std::to_string(WEXITSTATUS(status))).c_str());
          --active;
          continue;
        }
      }
      const std::string how = WIFSIGNALED(status)
                                  ? std::string("signal ") + strsignal(WTERMSIG(status))
                                  : "exit status " + std::to_string(WEXITSTATUS(status));
      if (worker.running >= 0) {
        CaseResult crashed;
        crashed.status = Status::Error;
        crashed.detail = worker.timed_out
                             ? "timed out: still running after " +
                                   std::to_string(plan.case_timeout_seconds) +
                                   " s (--case-timeout); its worker process was stopped"
                             : "the worker process died (" + how + ") while running this case";
        worker.last_done = worker.running;
        record(static_cast<size_t>(worker.running), crashed);
      }
      if (worker.running < 0 || ++worker.restarts > 64 || !spawn(worker, device, plan)) {
        // Died outside a case, or too often: the rest of its shard cannot run.
        for (size_t index = static_cast<size_t>(worker.shard); index < cases.size();
             index += workers.size()) {
          CaseResult lost;
          lost.status = Status::Error;
          lost.detail = "not run: the worker process died (" + how + ")";
          record(index, lost);
        }
        --active;
      }
    }
    // After reading every pipe that had output, so that `running` is current: a worker still on
    // one case past the limit is stopped. Its pipe then closes, and the case is reported above
    // like a crash, on a later round.
    if (plan.case_timeout_seconds > 0) {
      const auto now = std::chrono::steady_clock::now();
      for (Worker& worker : workers) {
        if (worker.fd < 0 || worker.running < 0 || worker.timed_out ||
            std::find(heard.begin(), heard.end(), &worker) != heard.end() ||
            now - worker.case_started < std::chrono::seconds(plan.case_timeout_seconds))
          continue;
        kill(worker.pid, SIGKILL);
        worker.timed_out = true;
      }
    }
  }
  for (size_t index = 0; index < cases.size(); ++index) {
    if (done[index]) continue;
    CaseResult lost;
    lost.status = Status::Error;
    lost.detail = "not run: no result from its worker process";
    record(index, lost);
  }
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return run;
}

}  // namespace kiln::conformance
