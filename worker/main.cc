// gtco-worker: measures candidate programs for the farm.
#include "worker/worker_app.h"

int main(int argc, char** argv) { return gtco::worker::RunWorkerApp(argc, argv); }
