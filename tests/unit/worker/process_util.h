// Test helper: runs a program to completion (or a deadline) and captures its stdout and stderr.
#pragma once

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace gtco::worker::testing {

struct ProcessOutput {
  int exit_code = -1;  ///< -1 when killed (by a signal or the deadline)
  bool timed_out = false;
  std::string output;  ///< stdout and stderr, interleaved
};

/// Runs `argv` with `environment` ("NAME=value") added to this process's environment; kills it
/// after `timeout_seconds`.
inline ProcessOutput RunProcess(const std::vector<std::string>& argv,
                                const std::vector<std::pair<std::string, std::string>>& environment,
                                double timeout_seconds) {
  ProcessOutput result;
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return result;
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(pipe_fds[1], STDOUT_FILENO);
    ::dup2(pipe_fds[1], STDERR_FILENO);
    ::close(pipe_fds[0]);
    for (const auto& [name, value] : environment) ::setenv(name.c_str(), value.c_str(), 1);
    std::vector<char*> args;
    for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    _exit(127);
  }
  ::close(pipe_fds[1]);
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds * 1000));
  char buffer[4096];
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) {
      result.timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    pollfd poll_fd{pipe_fds[0], POLLIN, 0};
    if (::poll(&poll_fd, 1, static_cast<int>(left)) <= 0) continue;
    const ssize_t got = ::read(pipe_fds[0], buffer, sizeof(buffer));
    if (got <= 0) break;
    result.output.append(buffer, static_cast<size_t>(got));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  return result;
}

}  // namespace gtco::worker::testing
