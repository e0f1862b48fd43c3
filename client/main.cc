// gtco-client: submit models to the farm, follow jobs, query the schedule database.
#include "client/client_app.h"

int main(int argc, char** argv) { return gtco::client::RunClientApp(argc, argv); }
