"""GTCO from Python, one package for both ends of the farm:

* running a tuned model anywhere: `gtco.load("model.gtco")` -> a `gtco.Model` (numpy in, numpy
  out; the compiled runtime, which needs nothing of the farm: no gRPC, protobuf or compiler);
* driving a tuning farm: `gtco.Client(server, token=..., tls_ca=...)` with submit, watch,
  status, jobs, cancel, query, export and records; refusals raise `gtco.Error` subclasses
  (`gtco.NotFound`, `gtco.PermissionDenied`, ...) carrying the gRPC `.code`. The client half
  needs grpcio and protobuf (the `client` extra) and is imported on first use, so a machine
  that only runs artifacts never loads them.
"""
from typing import TYPE_CHECKING, Any

from gtco._runtime import Model, load, set_threads

if TYPE_CHECKING:  # what __getattr__ provides, for type checkers and IDEs
    from gtco.client import Client, RecordsFile, to_dict
    from gtco.errors import (Aborted, AlreadyExists, Cancelled, DataLoss, DeadlineExceeded,
                             Error, FailedPrecondition, Internal, InvalidArgument, NotFound,
                             OutOfRange, PermissionDenied, ResourceExhausted, Unauthenticated,
                             Unavailable, Unimplemented, Unknown)

_CLIENT_NAMES = frozenset({"Client", "RecordsFile", "to_dict"})
_ERROR_NAMES = frozenset({
    "Error", "Cancelled", "Unknown", "InvalidArgument", "DeadlineExceeded", "NotFound",
    "AlreadyExists", "PermissionDenied", "ResourceExhausted", "FailedPrecondition", "Aborted",
    "OutOfRange", "Unimplemented", "Internal", "Unavailable", "DataLoss", "Unauthenticated"})

__all__ = ["Model", "load", "set_threads", *sorted(_CLIENT_NAMES), *sorted(_ERROR_NAMES)]


def __getattr__(name: str) -> Any:
    """Imports the client half (grpcio, protobuf) when one of its names is first used."""
    if name in _CLIENT_NAMES or name in _ERROR_NAMES or name in ("client", "errors", "v1"):
        import importlib
        if name in ("client", "errors", "v1"):
            return importlib.import_module(f"gtco.{name}")
        module = importlib.import_module("gtco.client" if name in _CLIENT_NAMES else "gtco.errors")
        value = getattr(module, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'gtco' has no attribute '{name}'")


def __dir__() -> list:
    return sorted(set(globals()) | set(__all__))
