// gtco-server: the tuning farm's scheduler, schedule database and RPC endpoint.
#include "server/server_app.h"

int main(int argc, char** argv) { return gtco::server::RunServerApp(argc, argv); }
