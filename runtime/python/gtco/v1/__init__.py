"""The farm's RPC contract, package `gtco.v1` of proto/gtco/v1/gtco.proto: `gtco_pb2` (messages,
with a .pyi of their types) and `gtco_pb2_grpc` (service stubs) are generated from it when the
package is built (setup.py), never committed."""
