// The gtco-server program: flags, start-up, serving and orderly shutdown.
#pragma once

namespace gtco::server {

/// Runs gtco-server with its command line; returns the process exit code.
int RunServerApp(int argc, char** argv);

}  // namespace gtco::server
