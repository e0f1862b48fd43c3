"""gtco.Client: a GTCO tuning farm from Python, over the same gRPC contract as `gtco-client`.

    import gtco
    farm = gtco.Client("farm:7070", token=os.environ["GTCO_TOKEN"], tls_ca="ca.pem")
    job = farm.submit("model.onnx", target="cpu", budget=400)
    for status in farm.watch(job):
        print(status.state, status.trials_done, "/", status.budget)
    farm.export("model.onnx", "model.gtco")          # then gtco.load("model.gtco").run(...)

Replies are the contract's messages (`gtco.v1.gtco_pb2.JobStatus`, `QueryReply`, ...: typed, see
proto/gtco/v1/gtco.proto for every field); `to_dict` turns one into what `gtco-client --json`
prints. Refusals raise `gtco.Error` subclasses carrying the gRPC code (errors.py); a missing local
file raises the usual `OSError`. A Client is safe to share between threads.
"""
from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass
from typing import (Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence,
                    Tuple, TypeVar, Union)

import grpc
from google.protobuf import json_format
from google.protobuf.message import Message

from gtco import errors
from gtco.v1 import gtco_pb2 as pb
from gtco.v1 import gtco_pb2_grpc

__all__ = ["Client", "RecordsFile", "to_dict", "host_cpu"]

DEFAULT_SERVER = "127.0.0.1:7070"
CHUNK_BYTES = 1 << 20  # models travel in 1 MiB chunks, as with gtco-client
RECORDS_PER_BATCH = 500
TERMINAL_STATES = frozenset({"done", "failed", "cancelled"})
FAILOVER_SECONDS = 30  # how long calls try the other addresses while one is unreachable
WATCH_RECONNECTS = 30

JobRef = Union[str, "pb.JobStatus"]
"""A job: its id, or a JobStatus (what submit/status/watch return)."""
Shapes = Mapping[str, Sequence[int]]
"""Shapes of symbolic inputs, e.g. {"input": [1, 128, 768]} (gtco-client's --shape)."""
Model = Union[str, "os.PathLike[str]", bytes]
"""An ONNX model: a path, or its bytes."""
T = TypeVar("T")


@dataclass(frozen=True)
class RecordsFile:
    """What `Client.export_records` wrote: the file, its records and their distinct workloads."""
    path: str
    records: int
    workloads: int


def to_dict(message: Message) -> Dict[str, Any]:
    """A reply as `gtco-client --json` prints it: proto field names, every field present (int64
    as strings, as in protobuf's JSON mapping)."""
    try:  # protobuf >= 5.26 renamed the option
        return json_format.MessageToDict(message, preserving_proto_field_name=True,
                                         always_print_fields_with_no_presence=True)
    except TypeError:
        return json_format.MessageToDict(message, preserving_proto_field_name=True,
                                         including_default_value_fields=True)


def host_cpu() -> Tuple[List[str], str, int]:
    """This machine's CPU as an export targets it: (cpuinfo feature flags, model name, cores).
    GTCO_CPU_ISA=avx2 caps the features at AVX2, as for gtco-client and the workers."""
    features: List[str] = []
    model = ""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                key, _, value = line.partition(":")
                key, value = key.strip(), value.strip()
                if key == "model name" and not model:
                    model = value
                if key == "flags" and not features:
                    features = sorted(value.split())
    except OSError:
        pass  # not Linux: the server picks the instruction set from `isa` alone
    if os.environ.get("GTCO_CPU_ISA") == "avx2":
        beyond = ("avx512", "amx", "avx_vnni", "avxvnni", "avxifma", "avx_ifma")
        features = [f for f in features if not f.startswith(beyond)]
        model += " [GTCO_CPU_ISA=avx2]"
    return features, model, os.cpu_count() or 1


@contextlib.contextmanager
def _renamed_when_complete(partial: str, output: str) -> Iterator[None]:
    """The body writes `partial`; it becomes `output` when the body completes, and is removed
    when the body raises (so `output` is never half-written)."""
    try:
        yield
    except BaseException:
        try:
            os.remove(partial)
        except OSError:
            pass
        raise
    os.replace(partial, output)


def _job_id(job: JobRef) -> str:
    job_id = job if isinstance(job, str) else getattr(job, "job_id", None)
    if not isinstance(job_id, str) or not job_id:
        raise TypeError(f"expected a job id or a JobStatus, got {job!r}")
    return job_id


def _read_model(model: Model, name: Optional[str]) -> Tuple[bytes, str]:
    if isinstance(model, (bytes, bytearray, memoryview)):
        return bytes(model), name or "model.onnx"
    path = os.fspath(model)
    with open(path, "rb") as file:
        return file.read(), name or os.path.basename(path)


def _chunks(header: "pb.SubmitHeader", data: bytes) -> Iterator["pb.ModelChunk"]:
    yield pb.ModelChunk(header=header)
    for offset in range(0, len(data), CHUNK_BYTES):
        yield pb.ModelChunk(data=data[offset:offset + CHUNK_BYTES])


def _shape_overrides(shapes: Optional[Shapes]) -> List["pb.ShapeOverride"]:
    overrides = []
    for name, dims in (shapes or {}).items():
        dims = [int(dim) for dim in dims]
        if not dims or any(dim <= 0 for dim in dims):
            raise ValueError(f"shape of input '{name}' must be positive integers, got {dims}")
        overrides.append(pb.ShapeOverride(input=name, dims=dims))
    return overrides


class Client:
    """A connection to a GTCO farm (its active server and any standbys).

    server: "HOST:PORT", several comma-separated or as a list (an active server and standbys:
        a call that finds one unreachable tries the next for up to 30 s); default GTCO_SERVER,
        else 127.0.0.1:7070.
    token: the team's token (`gtco-server admin issue-token`), sent as a bearer token with every
        call; default GTCO_TOKEN; a farm started with --no-auth needs none.
    tls_ca: a PEM file of the CA that signed the server's certificate: talk TLS (else plaintext,
        which a farm accepts only on loopback or with --allow-insecure).
    timeout: seconds a short call may take (model uploads get at least 300, an export 1800).

    Connecting is lazy: an unreachable server shows up as `gtco.Unavailable` on the first call.
    Use as a context manager, or `close()` it, to release the connection.
    """

    def __init__(self, server: Union[str, Sequence[str], None] = None, *,
                 token: Optional[str] = None, tls_ca: Union[str, "os.PathLike[str]", None] = None,
                 timeout: float = 30.0) -> None:
        if server is None:
            server = os.environ.get("GTCO_SERVER") or DEFAULT_SERVER
        parts = server.split(",") if isinstance(server, str) else list(server)
        self.addresses: List[str] = [part.strip() for part in parts if part.strip()]
        if not self.addresses:
            raise ValueError("no server address given")
        self.timeout = timeout
        token = os.environ.get("GTCO_TOKEN", "") if token is None else token
        self._metadata: Tuple[Tuple[str, str], ...] = (
            (("authorization", f"Bearer {token}"),) if token else ())
        if tls_ca is not None:
            with open(tls_ca, "rb") as file:
                self._credentials: Optional[grpc.ChannelCredentials] = \
                    grpc.ssl_channel_credentials(root_certificates=file.read())
        else:
            self._credentials = None
        self._current = 0
        self._channel: Optional[grpc.Channel] = None
        self._stub: Any = None
        self._connect()

    # ------------------------------------------------------------------ connection

    @property
    def address(self) -> str:
        """The server address calls go to now."""
        return self.addresses[self._current]

    def _connect(self) -> None:
        if self._channel is not None:
            self._channel.close()
        options = [("grpc.max_receive_message_length", 64 * 1024 * 1024)]
        if self._credentials is not None:
            self._channel = grpc.secure_channel(self.address, self._credentials, options)
        else:
            self._channel = grpc.insecure_channel(self.address, options)
        self._stub = gtco_pb2_grpc.ClientServiceStub(self._channel)

    def _failover(self) -> None:
        if len(self.addresses) > 1:
            self._current = (self._current + 1) % len(self.addresses)
            self._connect()

    def close(self) -> None:
        """Closes the connection; the client is unusable afterwards."""
        if self._channel is not None:
            self._channel.close()
            self._channel = None

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"gtco.Client({','.join(self.addresses)!r}, tls={self._credentials is not None})"

    def _call(self, invoke: Callable[[Any, float], T], timeout: float) -> T:
        """Runs `invoke(stub, timeout)`, moving to the next address while the server is
        unreachable and several were given; a refusal becomes its gtco.Error."""
        give_up = time.monotonic() + FAILOVER_SECONDS
        attempt = 0
        while True:
            try:
                return invoke(self._stub, timeout)
            except grpc.RpcError as error:
                if (error.code() != grpc.StatusCode.UNAVAILABLE or len(self.addresses) < 2 or
                        time.monotonic() > give_up):
                    raise errors.from_rpc_error(error) from None
            self._failover()
            attempt += 1
            if attempt % len(self.addresses) == 0:
                time.sleep(1)

    # ------------------------------------------------------------------ jobs

    def submit(self, model: Model, target: str = "cpu", budget: int = 200, *,
               team: str = "default", shapes: Optional[Shapes] = None,
               scheduler: str = "gradient", rounds: int = 0,
               name: Optional[str] = None) -> "pb.JobStatus":
        """Submits an ONNX model for tuning and returns the new job (state "running", or "done"
        at once when every workload is already tuned in the database).

        budget: trials for the whole job (> 0). team: the job's team on a --no-auth farm (with
        tokens the token's team). shapes: sizes of symbolic inputs ({"input": [1, 128, 768]}).
        scheduler: "gradient" (budget where the expected end-to-end gain is largest) or "even".
        rounds: candidates per search round (0: the server's default). name: shown in listings
        (default: the file's name).
        Raises InvalidArgument (not ONNX, a symbolic dimension without `shapes`, ...),
        Unimplemented (an unsupported op, named), ResourceExhausted (a team quota), ...
        """
        data, model_name = _read_model(model, name)
        header = pb.SubmitHeader(model_name=model_name, target=target, budget=budget, team=team,
                                 shapes=_shape_overrides(shapes), rounds=rounds,
                                 scheduler=scheduler)
        reply = self._call(
            lambda stub, timeout: stub.Submit(_chunks(header, data), timeout=timeout,
                                              metadata=self._metadata),
            max(self.timeout, 300))
        return reply.job

    def status(self, job: JobRef) -> "pb.JobStatus":
        """The job now: state, trials, per-task progress and best latency, per-mapping detail
        (`tasks[i].mappings`) and the scheduler's latest `decisions` (what `status --explain`
        prints). Raises NotFound for an unknown job or another team's."""
        request = pb.GetJobRequest(job_id=_job_id(job))
        return self._call(lambda stub, timeout: stub.GetJob(
            request, timeout=timeout, metadata=self._metadata), self.timeout)

    def watch(self, job: JobRef, *, timeout: Optional[float] = None) -> Iterator["pb.JobStatus"]:
        """Follows a job: yields its JobStatus at once and on every change (trials done, best
        latencies, ETA), the last one in a final state ("done", "failed" or "cancelled"), then
        stops. While the server is unreachable it reconnects (to a standby if several addresses
        were given), giving up with Unavailable after 30 tries. timeout: seconds to follow at
        most (DeadlineExceeded after). Leaving the loop early closes the stream.
        """
        request = pb.WatchJobRequest(job_id=_job_id(job))
        deadline = time.monotonic() + timeout if timeout is not None else None
        last: Optional[pb.JobStatus] = None
        reconnects = 0
        while True:
            remaining = 24 * 3600.0 if deadline is None else deadline - time.monotonic()
            if remaining <= 0:
                raise errors.DeadlineExceeded(f"job {request.job_id} still "
                                              f"{last.state if last else 'unknown'} after "
                                              f"{timeout} s of watching")
            call = self._stub.WatchJob(request, timeout=remaining, metadata=self._metadata)
            try:
                for update in call:
                    last = update
                    reconnects = 0
                    yield update
                    if update.state in TERMINAL_STATES:
                        return
            except grpc.RpcError as error:
                if error.code() != grpc.StatusCode.UNAVAILABLE or reconnects >= WATCH_RECONNECTS:
                    raise errors.from_rpc_error(error) from None
                self._failover()
            finally:
                call.cancel()
            reconnects += 1
            if reconnects > WATCH_RECONNECTS:
                raise errors.Unavailable(f"gave up following job {request.job_id}: the stream "
                                         f"ended {WATCH_RECONNECTS} times before the job did")
            time.sleep(1)

    def wait(self, job: JobRef, *, timeout: Optional[float] = None) -> "pb.JobStatus":
        """Blocks until the job ends and returns its final status (see `watch`)."""
        last = None
        for last in self.watch(job, timeout=timeout):
            pass
        assert last is not None  # watch yields at least once or raises
        return last

    def jobs(self, *, team: str = "", state: str = "") -> List["pb.JobStatus"]:
        """The jobs this token may see (its team's; an admin's: all, or `team`'s), optionally
        only those in `state` (running, done, failed, cancelled; another answers
        InvalidArgument)."""
        request = pb.ListJobsRequest(team=team, state=state)
        reply = self._call(lambda stub, timeout: stub.ListJobs(
            request, timeout=timeout, metadata=self._metadata), self.timeout)
        return list(reply.jobs)

    def cancel(self, job: JobRef) -> "pb.JobStatus":
        """Cancels a running job (its trials so far stay in the database) and returns it."""
        request = pb.CancelJobRequest(job_id=_job_id(job))
        return self._call(lambda stub, timeout: stub.CancelJob(
            request, timeout=timeout, metadata=self._metadata), self.timeout)

    # ------------------------------------------------------------------ schedules

    def query(self, model: Optional[Model] = None, *, workload: Optional[str] = None,
              target: str = "cpu", shapes: Optional[Shapes] = None,
              limit: int = 1) -> "pb.QueryReply":
        """The best programs the database holds, for a model (one record per planned workload,
        `tuned` false where none is measured yet, and `estimated_latency_seconds`) or for one
        workload key (its `limit` best records, fastest first). Give exactly one of `model` and
        `workload`. Tuned schedules are shared by every team."""
        if (model is None) == (workload is None):
            raise ValueError("query needs exactly one of model= or workload=")
        if workload is not None:
            request = pb.QueryWorkloadRequest(workload_key=workload, target=target, limit=limit)
            return self._call(lambda stub, timeout: stub.QueryWorkload(
                request, timeout=timeout, metadata=self._metadata), self.timeout)
        data, model_name = _read_model(model, None)
        header = pb.SubmitHeader(model_name=model_name, target=target,
                                 shapes=_shape_overrides(shapes))
        return self._call(lambda stub, timeout: stub.QueryModel(
            _chunks(header, data), timeout=timeout, metadata=self._metadata),
            max(self.timeout, 300))

    def export(self, model: Model, output: Union[str, "os.PathLike[str]"], *,
               target: str = "cpu", isa: str = "host", arch: str = "",
               require_tuned: bool = False, shapes: Optional[Shapes] = None,
               verify: bool = True,
               verify_inputs: Optional[Dict[str, Union[str, "os.PathLike[str]"]]] = None,
               on_progress: Optional[Callable[[str], None]] = None) -> "pb.ExportSummary":
        """Compiles the model with its best records into one artifact and writes it to `output`
        (through OUTPUT.partial, renamed only once complete: `output` is never half-written).
        Run it with `gtco.load(output)` or `gtco-run`.

        isa: "host" (this machine's CPU: its features pick the instruction set and records
        measured on the same CPU come first), or "x86-64-v2" | "x86-64-v3" | "x86-64-v4".
        arch (target "cuda"): the GPU architecture of the cubins ("sm_80", "sm_90"; "" is that
        of the farm's CUDA workers).
        require_tuned: refuse (FailedPrecondition, naming them) when a workload has no record,
        instead of compiling its default schedule (listed in the summary's `warnings`).
        verify: before the artifact is sent, the server runs it and a reference interpreter of
        the ONNX graph on random inputs and compares every output; a mismatch raises
        FailedPrecondition naming the first diverging node and nothing is written. False skips
        the check (the summary's and the artifact's verification say so).
        verify_inputs: graph input name -> .npy file, checked beside the random inputs.
        on_progress: called with each progress line of the server.
        Returns the summary: kernels, tuned, warnings, cpu, artifact_bytes,
        estimated_latency_seconds, verification, fallbacks (nodes run as fallback steps, with
        their measured seconds), run_seconds.
        """
        data, model_name = _read_model(model, None)
        spec = pb.ExportSpec(require_tuned=require_tuned, no_verify=not verify)
        if verify_inputs and not verify:
            raise ValueError("verify_inputs need verify=True")
        for name, path in (verify_inputs or {}).items():
            with open(path, "rb") as npy:
                spec.verify_inputs.add(name=name, npy=npy.read())
        if target == "cuda":
            spec.cuda_arch = arch
        elif arch:
            raise ValueError("arch is for CUDA exports (target='cuda')")
        elif isa == "host":
            features, cpu_model, cores = host_cpu()
            spec.cpu_features.extend(features)
            spec.cpu_model, spec.cores = cpu_model, cores
        else:
            spec.isa = isa
        header = pb.SubmitHeader(model_name=model_name, target=target,
                                 shapes=_shape_overrides(shapes), export_spec=spec)
        output = os.fspath(output)
        partial = output + ".partial"

        def invoke(stub: Any, timeout: float) -> Tuple["pb.ExportSummary", int]:
            summary, received = pb.ExportSummary(), 0
            with open(partial, "wb") as file:
                for reply in stub.Export(_chunks(header, data), timeout=timeout,
                                         metadata=self._metadata):
                    part = reply.WhichOneof("part")
                    if part == "summary":
                        summary = reply.summary
                    elif part == "artifact":
                        file.write(reply.artifact)
                        received += len(reply.artifact)
                    elif part == "progress" and on_progress is not None:
                        on_progress(reply.progress)
            return summary, received

        with _renamed_when_complete(partial, output):
            summary, received = self._call(invoke, max(self.timeout, 1800))
            if received != summary.artifact_bytes:
                raise errors.DataLoss(f"the artifact arrived incomplete ({received} of "
                                      f"{summary.artifact_bytes} bytes); nothing was written")
        return summary

    # ------------------------------------------------------------------ records

    def records(self, *, target: Optional[str] = None, workload: Optional[str] = None,
                include_failed: bool = False) -> Iterator["pb.StoredRecord"]:
        """Streams the stored measurements (ok ones; `include_failed`: failed trials too), or
        those of one target or workload key, each with its workload, trace, timings and
        provenance (worker, hardware, when). Shared by every team."""
        request = pb.ExportRecordsRequest(target=target or "", workload_key=workload or "",
                                          include_failed=include_failed)
        call = self._stub.ExportRecords(request, timeout=3600, metadata=self._metadata)
        try:
            for batch in call:
                yield from batch.records
        except grpc.RpcError as error:
            raise errors.from_rpc_error(error) from None
        finally:
            call.cancel()

    def export_records(self, output: Union[str, "os.PathLike[str]"], *,
                       target: Optional[str] = None, workload: Optional[str] = None,
                       include_failed: bool = False) -> RecordsFile:
        """Writes `records(...)` to `output`, one JSON object per line, the file
        `gtco-client records export` writes (through OUTPUT.partial, renamed once complete):
        another farm merges it with `import_records`."""
        output = os.fspath(output)
        partial = output + ".partial"
        count, workloads = 0, set()
        with _renamed_when_complete(partial, output), open(partial, "w") as file:
            for record in self.records(target=target, workload=workload,
                                       include_failed=include_failed):
                file.write(json.dumps(to_dict(record), separators=(",", ":")) + "\n")
                workloads.add(record.workload_key)
                count += 1
        return RecordsFile(output, count, len(workloads))

    def import_records(self, source: Union[str, "os.PathLike[str]",
                                           Iterable["pb.StoredRecord"]]) -> "pb.ImportRecordsReply":
        """Merges records (a file `export_records` or `gtco-client records export` wrote, or
        StoredRecord messages) into this farm's database; needs an admin token
        (PermissionDenied otherwise). The server checks every record first and refuses the whole
        lot, naming the bad one, with InvalidArgument; records already present (same candidate
        id) are left as they are, so importing twice adds nothing. Returns received, added,
        already_present and the import jobs that hold the added records.
        A line of the file that is not a record raises ValueError naming it, before any call.
        """
        if isinstance(source, (str, os.PathLike)):
            path = os.fspath(source)
            records = []
            with open(path) as file:
                for number, line in enumerate(file, 1):
                    if not line.strip():
                        continue
                    try:
                        records.append(json_format.Parse(line, pb.StoredRecord()))
                    except json_format.ParseError as error:
                        raise ValueError(f"{path}:{number}: not a record written by records "
                                         f"export: {error}") from None
        else:
            records = list(source)

        def batches() -> Iterator[pb.RecordBatch]:
            for at in range(0, len(records), RECORDS_PER_BATCH):
                yield pb.RecordBatch(records=records[at:at + RECORDS_PER_BATCH])

        return self._call(lambda stub, timeout: stub.ImportRecords(
            batches(), timeout=timeout, metadata=self._metadata), 3600)
