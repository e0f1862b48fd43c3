// A private PostgreSQL server for the database tests: one per test process, in a temporary
// directory, reachable on 127.0.0.1 and through a unix socket in that directory.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gtco::db::testing {

/// Runs initdb + pg_ctl from /usr/lib/postgresql/<version>/bin (or $GTCO_POSTGRES_BIN_DIR) as
/// the current user, or as the `postgres` system user when the tests run as root (initdb
/// refuses root). The cluster trusts local connections, runs without fsync (tests only), and is
/// stopped with `pg_ctl stop -m immediate` and deleted when the test program ends: normally
/// through a gtest environment, and by a watchdog process when the program dies early.
class PostgresServer {
 public:
  /// The server of this process, started on first call (later calls return the same one,
  /// started or not).
  static PostgresServer& Shared();

  /// True when the PostgreSQL binaries are installed but the unprivileged `postgres` user cannot
  /// reach them (a chroot whose root directory is private to root): a property of the host, so
  /// tests skip. Missing binaries are not this: `scripts/setup.sh --tests` installs them, and
  /// tests fail with start_status() saying so.
  bool unreachable_here() const { return unreachable_here_; }
  /// OK when the server runs; otherwise why not (with the server log's tail).
  const absl::Status& start_status() const { return start_status_; }

  /// Creates a fresh database named after `hint` (made unique) and returns its TCP URI.
  /// Databases use an ICU "en-US" collation when the server supports it, so that ordering
  /// bugs that a bytewise collation would hide show up.
  absl::StatusOr<std::string> CreateDatabase(const std::string& hint);
  /// URI of database `name` over TCP: postgresql://gtco@127.0.0.1:<port>/<name>.
  std::string TcpUri(const std::string& name) const;
  /// URI of database `name` through the socket directory (host= and port= parameters).
  std::string SocketUri(const std::string& name) const;

  /// Runs `sql` on a new connection to `uri` and returns the first column of the first row
  /// ("" when there is no row or it is NULL).
  static absl::StatusOr<std::string> Query(const std::string& uri, const std::string& sql);

  /// Stops the server and removes its directory; idempotent.
  void Stop();

 private:
  PostgresServer() = default;
  absl::Status Start();
  absl::Status RunServerCommand(const std::vector<std::string>& argv, const std::string& what);
  void StartWatchdog();

  bool unreachable_here_ = false;
  absl::Status start_status_;
  std::string bin_dir_;
  std::string directory_;  ///< the cluster's temporary directory (data/, logs, socket)
  int port_ = 0;
  bool run_as_other_user_ = false;
  uid_t run_uid_ = 0;
  gid_t run_gid_ = 0;
  bool icu_collation_ = true;  ///< cleared when the server refuses ICU databases
  int database_counter_ = 0;
  pid_t watchdog_pid_ = -1;
  int watchdog_pipe_ = -1;  ///< write end; closing it makes the watchdog stop the server
};

}  // namespace gtco::db::testing
