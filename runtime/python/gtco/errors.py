"""The farm's refusals as exceptions: one subclass of `gtco.Error` per gRPC status code, each
carrying the code, so callers catch what they can act on (`except gtco.NotFound:`)."""
from __future__ import annotations

from typing import Dict, Type

import grpc

__all__ = [
    "Error", "Cancelled", "Unknown", "InvalidArgument", "DeadlineExceeded", "NotFound",
    "AlreadyExists", "PermissionDenied", "ResourceExhausted", "FailedPrecondition", "Aborted",
    "OutOfRange", "Unimplemented", "Internal", "Unavailable", "DataLoss", "Unauthenticated",
]


class Error(Exception):
    """A call the farm refused or could not complete.

    `code` is the gRPC status code (`grpc.StatusCode.NOT_FOUND`, ...), `details` the server's
    message (what is wrong and, where it can, what to do about it). Every subclass fixes its code;
    `Error` itself is raised only for a code without a subclass.
    """

    code: grpc.StatusCode = grpc.StatusCode.UNKNOWN

    def __init__(self, details: str, code: grpc.StatusCode | None = None) -> None:
        super().__init__(details)
        self.details = details
        if code is not None:
            self.code = code

    def __str__(self) -> str:
        return f"{self.code.name}: {self.details}"


class Cancelled(Error):
    """The call was cancelled (by this process)."""
    code = grpc.StatusCode.CANCELLED


class Unknown(Error):
    """The server failed in a way it did not classify."""
    code = grpc.StatusCode.UNKNOWN


class InvalidArgument(Error):
    """A bad model or request: not ONNX, a symbolic dimension without `shapes`, an unknown
    target, state or instruction set, a malformed record."""
    code = grpc.StatusCode.INVALID_ARGUMENT


class DeadlineExceeded(Error):
    """The call's `timeout` ran out (or the server could not be reached within it)."""
    code = grpc.StatusCode.DEADLINE_EXCEEDED


class NotFound(Error):
    """An unknown job or workload, or another team's job (which answers as if it did not
    exist)."""
    code = grpc.StatusCode.NOT_FOUND


class AlreadyExists(Error):
    code = grpc.StatusCode.ALREADY_EXISTS


class PermissionDenied(Error):
    """A valid token whose role may not make this call (a worker token submitting, a submitter
    importing records)."""
    code = grpc.StatusCode.PERMISSION_DENIED


class ResourceExhausted(Error):
    """A team quota (concurrent jobs, trials per day): the message names the limit and the
    usage."""
    code = grpc.StatusCode.RESOURCE_EXHAUSTED


class FailedPrecondition(Error):
    """The request is valid but the farm's state refuses it (e.g. `export(require_tuned=True)`
    with untuned workloads, named in the message)."""
    code = grpc.StatusCode.FAILED_PRECONDITION


class Aborted(Error):
    code = grpc.StatusCode.ABORTED


class OutOfRange(Error):
    code = grpc.StatusCode.OUT_OF_RANGE


class Unimplemented(Error):
    """The model uses what the farm does not support yet (an ONNX op, named with its node)."""
    code = grpc.StatusCode.UNIMPLEMENTED


class Internal(Error):
    code = grpc.StatusCode.INTERNAL


class Unavailable(Error):
    """The server cannot be reached, or is up but cannot serve now (its database is down):
    retry later."""
    code = grpc.StatusCode.UNAVAILABLE


class DataLoss(Error):
    """Data was lost or corrupted on the way (an artifact that arrived incomplete, a stored
    state the server cannot read)."""
    code = grpc.StatusCode.DATA_LOSS


class Unauthenticated(Error):
    """No token, or one the farm does not know (revoked, mistyped): pass `token=` or set
    GTCO_TOKEN."""
    code = grpc.StatusCode.UNAUTHENTICATED


_BY_CODE: Dict[grpc.StatusCode, Type[Error]] = {
    cls.code: cls for cls in Error.__subclasses__()
}


def from_rpc_error(error: grpc.RpcError) -> Error:
    """The `gtco.Error` subclass instance for a failed gRPC call."""
    code = error.code() if hasattr(error, "code") else grpc.StatusCode.UNKNOWN
    details = (error.details() if hasattr(error, "details") else None) or str(error)
    return _BY_CODE.get(code, Error)(details, code)
