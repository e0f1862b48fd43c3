// The gtco-worker program: registers with the server, leases candidates, measures them in a
// runner child, reports results (never dropping one), heartbeats.
#pragma once

namespace gtco::worker {

/// Runs gtco-worker with its command line; returns the process exit code.
int RunWorkerApp(int argc, char** argv);

}  // namespace gtco::worker
