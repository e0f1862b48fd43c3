// Starts, serves and tears down the test process's private PostgreSQL server.
#include "tests/unit/db/postgres_server.h"

#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/util/status.h"

namespace gtco::db::testing {
namespace {

constexpr char kSuperuser[] = "gtco";

PostgresServer* g_shared_server = nullptr;

// Stops the shared server after the last test, whatever the tests' outcome.
class PostgresServerEnvironment : public ::testing::Environment {
 public:
  void TearDown() override {
    if (g_shared_server != nullptr) g_shared_server->Stop();
  }
};

[[maybe_unused]] const ::testing::Environment* const kServerEnvironment =
    ::testing::AddGlobalTestEnvironment(new PostgresServerEnvironment);

bool IsExecutable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

// $GTCO_POSTGRES_BIN_DIR, else the newest /usr/lib/postgresql/<major>/bin with initdb and
// pg_ctl; "" when there is none.
std::string FindBinDir() {
  auto has_server_tools = [](const std::string& bin_dir) {
    return IsExecutable(bin_dir + "/initdb") && IsExecutable(bin_dir + "/pg_ctl");
  };
  if (const char* configured = std::getenv("GTCO_POSTGRES_BIN_DIR"); configured != nullptr) {
    return has_server_tools(configured) ? configured : "";
  }
  for (int major = 30; major >= 10; --major) {
    const std::string bin_dir = absl::StrCat("/usr/lib/postgresql/", major, "/bin");
    if (has_server_tools(bin_dir)) return bin_dir;
  }
  return "";
}

// A TCP port on 127.0.0.1 that nobody listens on right now (0 when none could be found).
int FreeLoopbackPort() {
  const int socket_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (socket_fd < 0) return 0;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  int port = 0;
  if (bind(socket_fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
      getsockname(socket_fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    port = ntohs(address.sin_port);
  }
  close(socket_fd);
  return port;
}

// Runs `argv` (argv[0] a full path) with stdin from /dev/null and stdout/stderr appended to
// `log_path`, as uid/gid when `switch_user`. Returns the exit code, -1 when it did not exit.
int RunCommand(const std::vector<std::string>& argv, const std::string& log_path, bool switch_user,
               uid_t uid, gid_t gid) {
  std::vector<char*> c_argv;
  for (const std::string& argument : argv) c_argv.push_back(const_cast<char*>(argument.c_str()));
  c_argv.push_back(nullptr);
  const pid_t child = fork();
  if (child < 0) return -1;
  if (child == 0) {
    const int log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    const int null_fd = open("/dev/null", O_RDONLY);
    if (log_fd < 0 || null_fd < 0) _exit(125);
    dup2(null_fd, STDIN_FILENO);
    dup2(log_fd, STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    if (switch_user && (setgroups(0, nullptr) != 0 || setgid(gid) != 0 || setuid(uid) != 0)) {
      _exit(126);
    }
    execv(c_argv[0], c_argv.data());
    _exit(127);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Whether uid/gid may execute `path` (every directory on the way traversable): checked in a
// child that switches user, as the server commands will.
bool UserCanExecute(const std::string& path, uid_t uid, gid_t gid) {
  const pid_t child = fork();
  if (child < 0) return false;
  if (child == 0) {
    if (setgroups(0, nullptr) != 0 || setgid(gid) != 0 || setuid(uid) != 0) _exit(2);
    _exit(access(path.c_str(), X_OK) == 0 ? 0 : 1);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) return false;
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// The last `max_chars` characters of a file ("" when unreadable).
std::string FileTail(const std::string& path, size_t max_chars = 2000) {
  std::ifstream file(path);
  std::stringstream contents;
  contents << file.rdbuf();
  const std::string text = contents.str();
  return text.size() <= max_chars ? text : text.substr(text.size() - max_chars);
}

// Lower-case letters, digits and '_' only, so the name is a plain SQL identifier.
std::string IdentifierFrom(const std::string& hint) {
  std::string identifier;
  for (const char c : hint) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      identifier.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    } else {
      identifier.push_back('_');
    }
  }
  return identifier.substr(0, 40);
}

}  // namespace

PostgresServer& PostgresServer::Shared() {
  if (g_shared_server == nullptr) {
    g_shared_server = new PostgresServer();
    g_shared_server->start_status_ = g_shared_server->Start();
    if (!g_shared_server->start_status_.ok()) g_shared_server->Stop();
  }
  return *g_shared_server;
}

absl::Status PostgresServer::RunServerCommand(const std::vector<std::string>& argv,
                                              const std::string& what) {
  const std::string log_path = absl::StrCat(directory_, "/", what, ".log");
  const int exit_code = RunCommand(argv, log_path, run_as_other_user_, run_uid_, run_gid_);
  if (exit_code == 0) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(
      what, " failed (exit code ", exit_code, "): ", absl::StrJoin(argv, " "), "\n--- ", log_path,
      ":\n", FileTail(log_path), "\n--- server.log:\n", FileTail(directory_ + "/server.log")));
}

absl::Status PostgresServer::Start() {
  bin_dir_ = FindBinDir();
  if (bin_dir_.empty()) {
    return absl::FailedPreconditionError(
        "PostgreSQL server binaries (initdb, pg_ctl) not found under /usr/lib/postgresql/*/bin "
        "or $GTCO_POSTGRES_BIN_DIR: run scripts/setup.sh --tests (or install the Debian package "
        "'postgresql') to run the PostgreSQL instances of the database tests");
  }
  if (geteuid() == 0) {
    // initdb and pg_ctl refuse to run as root: hand the cluster to the `postgres` user.
    const passwd* account = getpwnam("postgres");
    if (account == nullptr) {
      return absl::FailedPreconditionError(
          "running as root and there is no 'postgres' user to run the PostgreSQL server as "
          "(the Debian package 'postgresql' creates it)");
    }
    run_as_other_user_ = true;
    run_uid_ = account->pw_uid;
    run_gid_ = account->pw_gid;
    if (!UserCanExecute(bin_dir_ + "/initdb", run_uid_, run_gid_)) {
      // Seen in chroots whose root directory is private to root (mode 0700).
      unreachable_here_ = true;
      return absl::FailedPreconditionError(absl::StrCat(
          "the 'postgres' user cannot execute ", bin_dir_,
          "/initdb here (a directory on the way is not traversable by other users), so the "
          "PostgreSQL instances of the database tests cannot start a server"));
    }
  }
  // A short path under /tmp: the socket path must stay under ~100 characters, and the
  // `postgres` user must be able to reach it.
  std::string pattern = "/tmp/gtco_pg_XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) {
    return absl::InternalError(absl::StrCat("mkdtemp failed: ", std::strerror(errno)));
  }
  directory_ = pattern;
  if (run_as_other_user_ && chown(directory_.c_str(), run_uid_, run_gid_) != 0) {
    return absl::InternalError(absl::StrCat("chown ", directory_, ": ", std::strerror(errno)));
  }
  StartWatchdog();
  port_ = FreeLoopbackPort();
  if (port_ == 0) return absl::InternalError("no free TCP port on 127.0.0.1");
  const std::string data_dir = directory_ + "/data";
  GTCO_RETURN_IF_ERROR(
      RunServerCommand({bin_dir_ + "/initdb", "-D", data_dir, "-U", kSuperuser, "--auth=trust",
                        "--encoding=UTF8", "--no-locale", "--no-sync"},
                       "initdb"));
  // Durability is irrelevant for a throw-away test cluster; speed is not.
  const std::string server_options =
      absl::StrCat("-p ", port_, " -k ", directory_,
                   " -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off"
                   " -c full_page_writes=off");
  GTCO_RETURN_IF_ERROR(
      RunServerCommand({bin_dir_ + "/pg_ctl", "start", "-D", data_dir, "-w", "-t", "60", "-l",
                        directory_ + "/server.log", "-o", server_options},
                       "pg_ctl_start"));
  absl::StatusOr<std::string> probe = Query(TcpUri("postgres"), "SELECT 1");
  if (!probe.ok()) return probe.status();
  return absl::OkStatus();
}

void PostgresServer::StartWatchdog() {
  // Everything the watchdog runs is prepared before fork().
  const std::vector<std::string> stop_argv = {
      bin_dir_ + "/pg_ctl", "stop", "-D", directory_ + "/data", "-m", "immediate", "-s"};
  const std::vector<std::string> remove_argv = {"/bin/rm", "-rf", directory_};
  const std::string stop_log = directory_ + "/pg_ctl_stop.log";
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return;
  const pid_t child = fork();
  if (child < 0) {
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    return;
  }
  if (child == 0) {
    // The watchdog: waits until the test process closes the pipe (Stop() or its death), then
    // stops the server and removes the directory. Its own session, so that a signal sent to
    // the test's process group does not take it down before it has cleaned up.
    close(pipe_fds[1]);
    setsid();
    const int null_fd = open("/dev/null", O_RDWR);
    if (null_fd >= 0) {
      dup2(null_fd, STDIN_FILENO);
      dup2(null_fd, STDOUT_FILENO);
      dup2(null_fd, STDERR_FILENO);
    }
    char byte;
    while (read(pipe_fds[0], &byte, 1) != 0) {
      if (errno != EINTR) break;
    }
    if (access(stop_argv[3].c_str(), F_OK) == 0) {
      RunCommand(stop_argv, stop_log, run_as_other_user_, run_uid_, run_gid_);
    }
    RunCommand(remove_argv, "/dev/null", false, 0, 0);
    _exit(0);
  }
  close(pipe_fds[0]);
  watchdog_pid_ = child;
  watchdog_pipe_ = pipe_fds[1];
}

void PostgresServer::Stop() {
  if (watchdog_pipe_ < 0) return;
  close(watchdog_pipe_);
  watchdog_pipe_ = -1;
  int status = 0;
  while (waitpid(watchdog_pid_, &status, 0) < 0 && errno == EINTR) {
  }
  watchdog_pid_ = -1;
}

std::string PostgresServer::TcpUri(const std::string& name) const {
  return absl::StrCat("postgresql://", kSuperuser, "@127.0.0.1:", port_, "/", name);
}

std::string PostgresServer::SocketUri(const std::string& name) const {
  return absl::StrCat("postgresql:///", name, "?host=", directory_, "&port=", port_,
                      "&user=", kSuperuser);
}

absl::StatusOr<std::string> PostgresServer::CreateDatabase(const std::string& hint) {
  if (!start_status_.ok()) return start_status_;
  const std::string name = absl::StrCat("t", ++database_counter_, "_", IdentifierFrom(hint));
  if (icu_collation_) {
    absl::StatusOr<std::string> created = Query(
        TcpUri("postgres"), absl::StrCat("CREATE DATABASE ", name,
                                         " TEMPLATE template0 ENCODING 'UTF8' "
                                         "LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C'"));
    if (created.ok()) return TcpUri(name);
    icu_collation_ = false;  // a server built without ICU: fall back to the default collation
  }
  absl::StatusOr<std::string> created =
      Query(TcpUri("postgres"), absl::StrCat("CREATE DATABASE ", name));
  if (!created.ok()) return created.status();
  return TcpUri(name);
}

absl::StatusOr<std::string> PostgresServer::Query(const std::string& uri, const std::string& sql) {
  PGconn* connection = PQconnectdb(uri.c_str());
  if (PQstatus(connection) != CONNECTION_OK) {
    absl::Status status =
        absl::UnavailableError(absl::StrCat("connect to ", uri, ": ", PQerrorMessage(connection)));
    PQfinish(connection);
    return status;
  }
  PQsetNoticeProcessor(
      connection, [](void*, const char*) {}, nullptr);
  PGresult* result = PQexec(connection, sql.c_str());
  const ExecStatusType result_status = PQresultStatus(result);
  absl::StatusOr<std::string> value;
  if (result_status != PGRES_COMMAND_OK && result_status != PGRES_TUPLES_OK) {
    value = absl::InternalError(
        absl::StrCat("query '", sql, "' on ", uri, ": ", PQresultErrorMessage(result)));
  } else if (PQntuples(result) > 0 && PQnfields(result) > 0 && !PQgetisnull(result, 0, 0)) {
    value = std::string(PQgetvalue(result, 0, 0));
  } else {
    value = std::string();
  }
  PQclear(result);
  PQfinish(connection);
  return value;
}

}  // namespace gtco::db::testing
