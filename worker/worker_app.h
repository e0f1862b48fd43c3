// The gtco-worker program: registers with the server, leases candidates, measures them in a
// runner child, reports results (never dropping one), heartbeats.
#pragma once

#include "common/target/target.h"
#include "gtco/v1/gtco.pb.h"

namespace gtco::worker {

/// `info` as the worker registers it (RegisterRequest.hardware).
gtco::v1::Hardware HardwareProto(const target::HardwareInfo& info);

/// Runs gtco-worker with its command line; returns the process exit code.
int RunWorkerApp(int argc, char** argv);

}  // namespace gtco::worker
