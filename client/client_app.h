// The gtco-client program: the command line teams use to submit, follow and query jobs.
#pragma once

namespace gtco::client {

/// Exit codes: 0 success, 1 the watched job failed or was cancelled, 2 usage error,
/// 3 the server refused (its message printed), 4 the server could not be reached.
int RunClientApp(int argc, char** argv);

}  // namespace gtco::client
