// gtco-client commands: submit, watch, status, jobs, cancel, query.
#include "client/client_app.h"

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <thread>
#include <algorithm>
#include <cstdio>
#include <set>

#include <google/protobuf/util/json_util.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/format.h"
#include "common/onnx/mixed_precision.h"
#include "common/target/target.h"
#include "common/util/flags.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "gtco/v1/gtco.grpc.pb.h"

namespace gtco::client {
namespace {

constexpr int kExitOk = 0, kExitJobFailed = 1, kExitUsage = 2, kExitRefused = 3,
              kExitUnreachable = 4;
constexpr size_t kChunkBytes = 1 << 20;

constexpr const char* kUsage =
    "usage: gtco-client [--server HOST:PORT[,HOST:PORT...]] [--token TOKEN] [--tls-ca PEM] [--timeout SECONDS]\n"
    "                   COMMAND ...\n"
    "  submit MODEL.onnx [--target cpu|cuda] [--budget N] [--team T] [--shape INPUT=1x128x768]...\n"
    "                    [--scheduler gradient|even] [--rounds N] [--precision f32|bf16|bf16x3] [--watch] [--json]\n"
    "                              --precision bf16: the MatMuls with constant weights and the\n"
    "                              ungrouped convs run in bf16 (weights stored in\n"
    "                              bf16, f32 sums and epilogues; convs on AMX or AVX-512 BF16);\n"
    "                              bf16x3: as three bf16 products of split operands, near f32\n"
    "                              accuracy, the convs of 32+ channels too (for AMX hosts); give the\n"
    "                              same flag to query and export\n"
    "  watch JOB [--json]          follow a job until it ends\n"
    "  status JOB [--explain] [--json]   --explain: trials, best and pruning per task and\n"
    "                              mapping, and why the scheduler spent the budget as it did\n"
    "  jobs [--team T] [--state S] [--json]\n"
    "  cancel JOB [--json]\n"
    "  health                      grpc.health.v1 check of the server\n"
    "  query --model MODEL.onnx [--target cpu] [--shape ...] [--precision f32|bf16|bf16x3] [--json]\n"
    "  query --workload KEY [--target cpu] [--limit N] [--json]\n"
    "  export MODEL.onnx -o|--output OUT.gtco [--target cpu] [--shape ...] [--precision f32|bf16|bf16x3]\n"
    "                    [--isa host|x86-64-v2|x86-64-v3|\n"
    "                    x86-64-v4] [--require-tuned] [--no-verify] [--verify-input NAME=FILE.npy]...\n"
    "                    [--json]   the model with its best records,\n"
    "                              compiled for this host's CPU (or --isa) into one artifact\n"
    "                              that gtco-run and the runtime library run (scheduled for\n"
    "                              this CPU when the server's is the same model); checked\n"
    "                              first against a reference interpreter of the ONNX graph on\n"
    "                              random inputs (and those of --verify-input): a mismatch\n"
    "                              writes nothing and names the first diverging node\n"
    "  export MODEL.onnx -o OUT.gtco --target cuda [--arch sm_80|sm_86|sm_89|sm_90] ...\n"
    "                              cubins compiled by NVRTC for the GPU architecture (default:\n"
    "                              that of the farm's CUDA workers); gtco-run runs it on a GPU\n"
    "  records export -o|--output OUT.jsonl [--target cpu|cuda] [--workload KEY] [--include-failed]\n"
    "                              every stored record (or those of a target or workload), one\n"
    "                              JSON object per line, with its workload and provenance\n"
    "  records import FILE.jsonl [--json]   merges such a file into this farm's database\n"
    "                              (admin token; checked first, all or nothing; records already\n"
    "                              present are left as they are, so importing twice adds nothing)\n"
    "The server address comes from --server or GTCO_SERVER (default 127.0.0.1:7070); the token\n"
    "from --token or GTCO_TOKEN (a farm started with --no-auth needs none); --tls-ca: talk TLS\n"
    "and trust this CA's certificate for the server.\n"
    "Exit codes: 0 ok, 1 job failed/cancelled, 2 usage, 3 refused by the server, 4 unreachable.\n";

int Usage(const std::string& message) {
  if (!message.empty()) std::cerr << "gtco-client: " << message << "\n";
  std::cerr << kUsage;
  return kExitUsage;
}

class Client {
 public:
  /// `credentials`: insecure or TLS channel credentials; `token`: sent as a bearer token with
  /// every call except the health check ("" sends none).
  /// `addresses`: the active server and its standbys (a call that finds one unreachable moves
  /// on to the next).
  Client(std::vector<std::string> addresses, std::shared_ptr<grpc::ChannelCredentials> credentials,
         std::string token, int timeout_seconds, bool json)
      : addresses_(std::move(addresses)),
        credentials_(std::move(credentials)),
        token_(std::move(token)),
        timeout_seconds_(timeout_seconds),
        json_(json) {
    Connect();
  }

  /// --precision bf16|bf16x3: model files are rewritten before they are sent (nullopt: f32).
  void set_bf16(std::optional<onnx::Bf16Precision> bf16) { bf16_ = bf16; }

  /// Prints the error and returns the exit code for a failed call.
  int Fail(const grpc::Status& status) {
    auto code = status.error_code();
    if (code == grpc::StatusCode::UNAVAILABLE && channel_->GetState(false) == GRPC_CHANNEL_READY) {
      // The server answered: it is up, but what it needs (its database) is not.
      std::cerr << "gtco-client: the server at " << address_
                << " cannot serve this now (UNAVAILABLE): " << status.error_message()
                << "; retry later\n";
      return kExitUnreachable;
    }
    if (code == grpc::StatusCode::UNAVAILABLE ||
        (code == grpc::StatusCode::DEADLINE_EXCEEDED && !connected_)) {
      std::cerr << "gtco-client: cannot reach the server at " << address_ << ": "
                << status.error_message() << "\n";
      return kExitUnreachable;
    }
    std::cerr << "gtco-client: the server refused (" << CodeName(code)
              << "): " << status.error_message() << "\n";
    return kExitRefused;
  }

  void Connect() {
    address_ = addresses_[current_];
    grpc::ChannelArguments channel_args;
    channel_args.SetMaxReceiveMessageSize(64 * 1024 * 1024);
    channel_ = grpc::CreateCustomChannel(address_, credentials_, channel_args);
    stub_ = gtco::v1::ClientService::NewStub(channel_);
  }

  /// Moves to the next server address, if there are several.
  void Failover() {
    if (addresses_.size() < 2) return;
    current_ = (current_ + 1) % addresses_.size();
    Connect();
  }

  /// Runs the unary call `call(context)`; while the server is unreachable and several addresses
  /// were given, tries the others in turn for up to 30 s (a standby takes over within that).
  template <typename Call>
  grpc::Status WithFailover(Call call, int seconds = 0) {
    grpc::Status status;
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    for (size_t attempt = 0;; ++attempt) {
      grpc::ClientContext context;
      PrepareContext(&context, seconds);
      status = call(&context);
      if (status.error_code() != grpc::StatusCode::UNAVAILABLE || addresses_.size() < 2 ||
          std::chrono::steady_clock::now() > give_up) {
        return status;
      }
      Failover();
      if (attempt % addresses_.size() == addresses_.size() - 1) {
        std::this_thread::sleep_for(std::chrono::seconds(1));
      }
    }
  }

  /// Sets the call's deadline and its bearer token.
  void PrepareContext(grpc::ClientContext* context, int seconds = 0) {
    context->set_deadline(std::chrono::system_clock::now() +
                          std::chrono::seconds(seconds > 0 ? seconds : timeout_seconds_));
    if (!token_.empty()) context->AddMetadata("authorization", "Bearer " + token_);
  }

  int Submit(const std::string& path, const gtco::v1::SubmitHeader& header, bool watch) {
    std::string bytes;
    if (int code = ReadFile(path, &bytes)) return code;
    gtco::v1::SubmitReply reply;
    grpc::Status status = WithFailover(
        [&](grpc::ClientContext* context) {
          auto writer = stub_->Submit(context, &reply);
          return SendModel(writer.get(), header, bytes);
        },
        std::max(timeout_seconds_, 300));
    if (!status.ok()) return Fail(status);
    connected_ = true;
    if (!watch) {
      std::cout << (json_ ? ToJson(reply.job()) : FormatJob(reply.job())) << std::flush;
      return kExitOk;
    }
    if (!json_) std::cout << "submitted job " << reply.job().job_id() << std::endl;
    return Watch(reply.job().job_id());
  }

  int Watch(const std::string& job_id) {
    bool tty = ::isatty(STDOUT_FILENO);
    gtco::v1::JobStatus last;
    int printed_lines = 0;
    auto last_print = std::chrono::steady_clock::time_point{};
    for (int reconnects = 0; reconnects < 30; ++reconnects) {
      grpc::ClientContext context;
      PrepareContext(&context, 24 * 3600);
      gtco::v1::WatchJobRequest request;
      request.set_job_id(job_id);
      auto reader = stub_->WatchJob(&context, request);
      gtco::v1::JobStatus update;
      while (reader->Read(&update)) {
        connected_ = true;
        last = update;
        if (json_) continue;
        auto now = std::chrono::steady_clock::now();
        bool terminal = IsTerminal(update.state());
        if (!tty && !terminal && now - last_print < std::chrono::seconds(2)) continue;
        std::string text = FormatJob(update);
        if (tty && printed_lines > 0) std::cout << "\x1b[" << printed_lines << "F\x1b[J";
        std::cout << text << std::flush;
        printed_lines = static_cast<int>(std::count(text.begin(), text.end(), '\n'));
        last_print = now;
      }
      grpc::Status status = reader->Finish();
      if (IsTerminal(last.state())) break;
      if (!status.ok() && status.error_code() != grpc::StatusCode::UNAVAILABLE) {
        return Fail(status);
      }
      if (!status.ok() && !json_) {
        std::cerr << "gtco-client: lost the server (" << status.error_message()
                  << "); reconnecting\n";
      }
      if (!status.ok()) Failover();
      std::this_thread::sleep_for(std::chrono::seconds(1));
    }
    if (!IsTerminal(last.state())) {
      std::cerr << "gtco-client: gave up following job " << job_id << "\n";
      return kExitUnreachable;
    }
    if (json_) std::cout << ToJson(last) << std::flush;
    return last.state() == "done" ? kExitOk : kExitJobFailed;
  }

  /// grpc.health.v1 Check of the whole server.
  int Health() {
    auto health = grpc::health::v1::Health::NewStub(channel_);
    grpc::health::v1::HealthCheckRequest request;
    grpc::health::v1::HealthCheckResponse reply;
    grpc::ClientContext context;
    PrepareContext(&context);
    grpc::Status status = health->Check(&context, request, &reply);
    if (!status.ok()) return Fail(status);
    std::string name = grpc::health::v1::HealthCheckResponse::ServingStatus_Name(reply.status());
    std::cout << (json_ ? ToJson(reply) : name + "\n") << std::flush;
    return reply.status() == grpc::health::v1::HealthCheckResponse::SERVING ? kExitOk
                                                                            : kExitRefused;
  }

  int Status(const std::string& job_id, bool explain) {
    gtco::v1::GetJobRequest request;
    request.set_job_id(job_id);
    gtco::v1::JobStatus reply;
    grpc::Status status = WithFailover(
        [&](grpc::ClientContext* context) { return stub_->GetJob(context, request, &reply); });
    if (!status.ok()) return Fail(status);
    std::cout << (json_ ? ToJson(reply)
                        : FormatJob(reply) + (explain ? "\n" + FormatExplain(reply) : ""))
              << std::flush;
    return kExitOk;
  }

  int Jobs(const std::string& team, const std::string& state) {
    gtco::v1::ListJobsRequest request;
    request.set_team(team);
    request.set_state(state);
    gtco::v1::ListJobsReply reply;
    grpc::Status status = WithFailover(
        [&](grpc::ClientContext* context) { return stub_->ListJobs(context, request, &reply); });
    if (!status.ok()) return Fail(status);
    if (json_) {
      std::cout << ToJson(reply) << std::flush;
    } else {
      for (const auto& job : reply.jobs()) std::cout << FormatJobLine(job) << "\n";
      if (reply.jobs().empty()) std::cout << "no jobs\n";
    }
    return kExitOk;
  }

  int Cancel(const std::string& job_id) {
    gtco::v1::CancelJobRequest request;
    request.set_job_id(job_id);
    gtco::v1::JobStatus reply;
    grpc::Status status = WithFailover(
        [&](grpc::ClientContext* context) { return stub_->CancelJob(context, request, &reply); });
    if (!status.ok()) return Fail(status);
    std::cout << (json_ ? ToJson(reply) : "cancelled job " + reply.job_id() + "\n") << std::flush;
    return kExitOk;
  }

  int QueryModel(const std::string& path, const gtco::v1::SubmitHeader& header) {
    std::string bytes;
    if (int code = ReadFile(path, &bytes)) return code;
    gtco::v1::QueryReply reply;
    grpc::Status status = WithFailover(
        [&](grpc::ClientContext* context) {
          auto writer = stub_->QueryModel(context, &reply);
          return SendModel(writer.get(), header, bytes);
        },
        std::max(timeout_seconds_, 300));
    if (!status.ok()) return Fail(status);
    std::cout << (json_ ? ToJson(reply) : FormatQuery(reply, true)) << std::flush;
    return kExitOk;
  }

  int Export(const std::string& path, const gtco::v1::SubmitHeader& header,
             const std::string& output) {
    std::string bytes;
    if (int code = ReadFile(path, &bytes)) return code;
    const std::string partial = output + ".partial";
    gtco::v1::ExportSummary summary;
    int64_t received = 0;
    grpc::Status status = WithFailover(
        [&](grpc::ClientContext* context) {
          auto stream = stub_->Export(context);
          gtco::v1::ModelChunk chunk;
          *chunk.mutable_header() = header;
          bool open = stream->Write(chunk);
          for (size_t offset = 0; open && offset < bytes.size(); offset += kChunkBytes) {
            chunk.Clear();
            chunk.set_data(bytes.substr(offset, kChunkBytes));
            open = stream->Write(chunk);
          }
          stream->WritesDone();
          std::ofstream file(partial, std::ios::binary | std::ios::trunc);
          received = 0;
          gtco::v1::ExportReply reply;
          while (stream->Read(&reply)) {
            if (reply.has_summary()) {
              summary = reply.summary();
            } else if (!reply.artifact().empty()) {
              file.write(reply.artifact().data(),
                         static_cast<std::streamsize>(reply.artifact().size()));
              received += static_cast<int64_t>(reply.artifact().size());
            } else if (!json_) {
              std::cerr << reply.progress() << std::endl;
            }
          }
          file.close();
          if (!file) {
            stream->Finish();
            return grpc::Status(grpc::StatusCode::INTERNAL, "cannot write '" + partial + "'");
          }
          return stream->Finish();
        },
        std::max(timeout_seconds_, 1800));
    if (!status.ok()) {
      std::remove(partial.c_str());
      return Fail(status);
    }
    if (received != summary.artifact_bytes() || std::rename(partial.c_str(), output.c_str()) != 0) {
      std::remove(partial.c_str());
      std::cerr << "gtco-client: the artifact arrived incomplete (" << received << " of "
                << summary.artifact_bytes() << " bytes); nothing was written\n";
      return kExitUnreachable;
    }
    if (json_) {
      std::cout << ToJson(summary) << std::flush;
      return kExitOk;
    }
    for (const std::string& warning : summary.warnings()) {
      std::cout << "warning: " << warning << "\n";
    }
    std::cout << "wrote " << output << " (" << summary.artifact_bytes() << " bytes, "
              << summary.kernels() << " kernels, " << summary.tuned() << " tuned, compiled for "
              << summary.cpu()
              << (summary.tune_cpu().empty() ? "" : ", scheduled for " + summary.tune_cpu()) << ")";
    if (summary.tuned() > 0) {
      std::cout << "; tuned kernels sum to " << summary.estimated_latency_seconds() * 1e3 << " ms";
    }
    std::cout << "\n" << FormatVerification(summary) << "run it: gtco-run " << output
              << " --random-inputs --bench 50\n"
              << std::flush;
    return kExitOk;
  }

  /// `records export`: every record the request selects, one JSON object per line, written to
  /// `output` (through OUT.partial, renamed when complete).
  int ExportRecords(const gtco::v1::ExportRecordsRequest& request, const std::string& output) {
    const std::string partial = output + ".partial";
    int64_t count = 0;
    std::set<std::string> workloads;
    google::protobuf::util::JsonPrintOptions options;
    options.always_print_primitive_fields = true;
    options.preserve_proto_field_names = true;
    grpc::Status status = WithFailover(
        [&](grpc::ClientContext* context) {
          std::ofstream file(partial, std::ios::trunc);
          count = 0;
          workloads.clear();
          auto reader = stub_->ExportRecords(context, request);
          gtco::v1::RecordBatch batch;
          while (reader->Read(&batch)) {
            for (const gtco::v1::StoredRecord& record : batch.records()) {
              std::string line;
              (void)google::protobuf::util::MessageToJsonString(record, &line, options);
              file << line << "\n";
              workloads.insert(record.workload_key());
              ++count;
            }
          }
          grpc::Status finished = reader->Finish();
          file.close();
          if (finished.ok() && !file) {
            return grpc::Status(grpc::StatusCode::DATA_LOSS, "cannot write '" + partial + "'");
          }
          return finished;
        },
        3600);
    if (!status.ok()) {
      std::remove(partial.c_str());
      return Fail(status);
    }
    if (std::rename(partial.c_str(), output.c_str()) != 0) {
      std::cerr << "gtco-client: cannot rename '" << partial << "' to '" << output << "'\n";
      return kExitRefused;
    }
    if (json_) {
      std::cout << "{\"path\": \"" << output << "\", \"records\": " << count
                << ", \"workloads\": " << workloads.size() << "}\n";
    } else {
      std::cout << "wrote " << output << ": " << count << " records of " << workloads.size()
                << " workloads\n";
    }
    return kExitOk;
  }

  /// `records import`: reads a `records export` file (every line checked here first, naming the
  /// line of a bad one) and sends it to the server, which merges it idempotently.
  int ImportRecords(const std::string& path) {
    std::ifstream file(path);
    if (!file) {
      std::cerr << "gtco-client: cannot read records file '" << path << "'\n";
      return kExitUsage;
    }
    std::vector<gtco::v1::StoredRecord> records;
    google::protobuf::util::JsonParseOptions options;
    options.ignore_unknown_fields = false;
    std::string line;
    for (int number = 1; std::getline(file, line); ++number) {
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      gtco::v1::StoredRecord record;
      auto parsed = google::protobuf::util::JsonStringToMessage(line, &record, options);
      if (!parsed.ok()) {
        std::cerr << "gtco-client: " << path << ":" << number
                  << ": not a record written by `gtco-client records export`: "
                  << parsed.message() << "\n";
        return kExitUsage;
      }
      records.push_back(std::move(record));
    }
    gtco::v1::ImportRecordsReply reply;
    grpc::Status status = WithFailover(
        [&](grpc::ClientContext* context) {
          auto writer = stub_->ImportRecords(context, &reply);
          constexpr size_t kBatch = 500;
          bool open = true;
          for (size_t at = 0; open && at < records.size(); at += kBatch) {
            gtco::v1::RecordBatch batch;
            for (size_t i = at; i < std::min(records.size(), at + kBatch); ++i) {
              *batch.add_records() = records[i];
            }
            open = writer->Write(batch);
          }
          writer->WritesDone();
          return writer->Finish();
        },
        3600);
    if (!status.ok()) return Fail(status);
    if (json_) {
      std::cout << ToJson(reply) << std::flush;
    } else {
      std::cout << "imported " << path << ": " << reply.received() << " records, "
                << reply.added() << " added, " << reply.already_present()
                << " already present";
      for (const std::string& job : reply.job_ids()) std::cout << " (job " << job << ")";
      std::cout << "\n";
    }
    return kExitOk;
  }

  int QueryWorkload(const std::string& key, const std::string& target, int limit) {
    gtco::v1::QueryWorkloadRequest request;
    request.set_workload_key(key);
    request.set_target(target);
    request.set_limit(limit);
    gtco::v1::QueryReply reply;
    grpc::Status status = WithFailover(
        [&](grpc::ClientContext* context) { return stub_->QueryWorkload(context, request, &reply); });
    if (!status.ok()) return Fail(status);
    std::cout << (json_ ? ToJson(reply) : FormatQuery(reply, false)) << std::flush;
    return kExitOk;
  }

 private:
  static bool IsTerminal(const std::string& state) {
    return state == "done" || state == "failed" || state == "cancelled";
  }

  static const char* CodeName(grpc::StatusCode code) {
    switch (code) {
      case grpc::StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
      case grpc::StatusCode::NOT_FOUND: return "NOT_FOUND";
      case grpc::StatusCode::UNIMPLEMENTED: return "UNIMPLEMENTED";
      case grpc::StatusCode::FAILED_PRECONDITION: return "FAILED_PRECONDITION";
      case grpc::StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
      case grpc::StatusCode::PERMISSION_DENIED: return "PERMISSION_DENIED";
      case grpc::StatusCode::UNAUTHENTICATED: return "UNAUTHENTICATED";
      case grpc::StatusCode::ALREADY_EXISTS: return "ALREADY_EXISTS";
      case grpc::StatusCode::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
      case grpc::StatusCode::INTERNAL: return "INTERNAL";
      case grpc::StatusCode::DATA_LOSS: return "DATA_LOSS";
      default: return "ERROR";
    }
  }

  /// The model file's bytes; with --precision bf16, rewritten first (onnx/mixed_precision.h).
  int ReadFile(const std::string& path, std::string* bytes) {
    std::ifstream file(path, std::ios::binary);
    if (!file) {
      std::cerr << "gtco-client: cannot read model file '" << path << "'\n";
      return kExitUsage;
    }
    std::ostringstream content;
    content << file.rdbuf();
    *bytes = content.str();
    if (!bf16_.has_value()) return 0;
    const std::string flag = absl::StrCat("--precision ", onnx::Bf16PrecisionName(*bf16_));
    absl::StatusOr<onnx::Bf16Rewrite> rewritten = onnx::RewriteMatMulsToBf16(*bytes, *bf16_);
    if (!rewritten.ok()) {  // refused as the server refuses a model it cannot take
      std::cerr << "gtco-client: " << flag << ": " << rewritten.status().message() << "\n";
      return kExitRefused;
    }
    if (!json_) {
      std::cerr << "gtco-client: " << flag << ": " << rewritten->matmuls << " MatMuls"
                << (rewritten->convs > 0 ? absl::StrCat(" and ", rewritten->convs, " Convs")
                                         : std::string())
                << " in " << onnx::Bf16PrecisionName(*bf16_) << " (" << rewritten->weights
                << " weights stored in bf16), " << rewritten->kept_f32
                << " MatMuls left in f32\n";
    }
    *bytes = std::move(rewritten->model_bytes);
    return 0;
  }

  template <typename Writer>
  grpc::Status SendModel(Writer* writer, const gtco::v1::SubmitHeader& header,
                         const std::string& bytes) {
    gtco::v1::ModelChunk chunk;
    *chunk.mutable_header() = header;
    bool open = writer->Write(chunk);
    for (size_t offset = 0; open && offset < bytes.size(); offset += kChunkBytes) {
      chunk.Clear();
      chunk.set_data(bytes.substr(offset, kChunkBytes));
      open = writer->Write(chunk);
    }
    writer->WritesDone();
    return writer->Finish();
  }

  std::vector<std::string> addresses_;
  size_t current_ = 0;
  std::shared_ptr<grpc::ChannelCredentials> credentials_;
  std::string address_;  ///< the address in use
  std::string token_;
  int timeout_seconds_;
  bool json_;
  std::optional<onnx::Bf16Precision> bf16_;  ///< see set_bf16
  bool connected_ = false;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<gtco::v1::ClientService::Stub> stub_;
};

/// Parses "--shape input=1x128x768" values into the header.
bool AddShapes(const std::vector<std::string>& specs, gtco::v1::SubmitHeader* header,
               std::string* error) {
  for (const std::string& spec : specs) {
    size_t equals = spec.rfind('=');
    if (equals == std::string::npos || equals == 0) {
      *error = "--shape expects INPUT=DIMxDIMx..., e.g. --shape input=1x128x768; got '" + spec + "'";
      return false;
    }
    gtco::v1::ShapeOverride* shape = header->add_shapes();
    shape->set_input(spec.substr(0, equals));
    for (absl::string_view dim : absl::StrSplit(spec.substr(equals + 1), 'x')) {
      int64_t value = 0;
      if (!absl::SimpleAtoi(dim, &value) || value <= 0) {
        *error = "--shape dimensions must be positive integers; got '" + spec + "'";
        return false;
      }
      shape->add_dims(value);
    }
  }
  return true;
}

}  // namespace

int RunClientApp(int argc, char** argv) {
  util::FlagSpec spec{{"server", "timeout", "target", "budget", "team", "shape", "state", "model",
                       "workload", "limit", "rounds", "scheduler", "token", "tls-ca", "output", "isa", "arch", "precision",
                       "verify-input"},
                      {"watch", "json", "help", "explain", "require-tuned", "include-failed",
                       "no-verify"}};
  std::vector<std::string> raw(argv + 1, argv + argc);
  for (std::string& arg : raw) {
    if (arg == "-o") arg = "--output";  // export -o OUT.gtco
  }
  auto args = util::ParsedArgs::Parse(raw, spec);
  if (!args.ok()) return Usage(std::string(args.status().message()));
  if (args->Has("help")) {
    std::cout << kUsage;
    return kExitOk;
  }
  const auto& positional = args->positional();
  if (positional.empty()) return Usage("no command given");
  std::string server = args->Get("server");
  if (server.empty() && std::getenv("GTCO_SERVER")) server = std::getenv("GTCO_SERVER");
  if (server.empty()) server = "127.0.0.1:7070";
  auto timeout = args->GetInt("timeout", 30);
  auto budget = args->GetInt("budget", 200);
  auto limit = args->GetInt("limit", 1);
  for (const auto* value : {&timeout, &budget, &limit}) {
    if (!value->ok()) return Usage(std::string(value->status().message()));
  }
  std::string token = args->Get("token");
  if (token.empty() && std::getenv("GTCO_TOKEN")) token = std::getenv("GTCO_TOKEN");
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (args->Has("tls-ca")) {
    std::ifstream ca_file(args->Get("tls-ca"));
    if (!ca_file) return Usage("cannot read --tls-ca file '" + args->Get("tls-ca") + "'");
    std::ostringstream ca;
    ca << ca_file.rdbuf();
    grpc::SslCredentialsOptions tls;
    tls.pem_root_certs = ca.str();
    credentials = grpc::SslCredentials(tls);
  }
  // Several servers (an active one and its standbys): repeated --server or comma-separated.
  std::vector<std::string> addresses;
  for (const std::string& value :
       args->GetAll("server").empty() ? std::vector<std::string>{server} : args->GetAll("server")) {
    for (absl::string_view part : absl::StrSplit(value, ',', absl::SkipEmpty())) {
      addresses.emplace_back(part);
    }
  }
  if (addresses.empty()) addresses.push_back(server);
  Client client(addresses, credentials, token, static_cast<int>(*timeout), args->Has("json"));
  const std::string& command = positional[0];
  const std::string precision = args->Get("precision", "f32");
  if (precision != "f32" && precision != "bf16" && precision != "bf16x3") {
    return Usage("--precision takes f32, bf16 or bf16x3, not '" + precision + "'");
  }
  const bool reads_a_model =
      command == "submit" || command == "export" || (command == "query" && args->Has("model"));
  if (args->Has("precision") && !reads_a_model) {
    return Usage("--precision applies to submit, query --model and export, not " + command);
  }
  if (precision == "bf16") client.set_bf16(onnx::Bf16Precision::kBf16);
  if (precision == "bf16x3") client.set_bf16(onnx::Bf16Precision::kBf16x3);
  gtco::v1::SubmitHeader header;
  header.set_target(args->Get("target", "cpu"));
  std::string shape_error;
  if (!AddShapes(args->GetAll("shape"), &header, &shape_error)) return Usage(shape_error);

  if (command == "submit") {
    if (positional.size() != 2) return Usage("submit needs exactly one model file");
    header.set_budget(*budget);
    header.set_team(args->Get("team", "default"));
    header.set_scheduler(args->Get("scheduler", "gradient"));
    auto rounds = args->GetInt("rounds", 0);
    if (!rounds.ok()) return Usage(std::string(rounds.status().message()));
    header.set_rounds(static_cast<int>(*rounds));
    std::string path = positional[1];
    header.set_model_name(path.substr(path.find_last_of('/') + 1));
    return client.Submit(path, header, args->Has("watch"));
  }
  if (command == "watch" || command == "status" || command == "cancel") {
    if (positional.size() != 2) return Usage(command + " needs a job id");
    if (command == "watch") return client.Watch(positional[1]);
    if (command == "status") return client.Status(positional[1], args->Has("explain"));
    return client.Cancel(positional[1]);
  }
  if (command == "health") {
    if (positional.size() != 1) return Usage("health takes no positional argument");
    return client.Health();
  }
  if (command == "jobs") {
    if (positional.size() != 1) return Usage("jobs takes no positional argument");
    return client.Jobs(args->Get("team"), args->Get("state"));
  }
  if (command == "query") {
    if (positional.size() != 1) return Usage("query takes --model FILE or --workload KEY");
    if (args->Has("model") == args->Has("workload")) {
      return Usage("query needs exactly one of --model FILE or --workload KEY");
    }
    if (args->Has("model")) return client.QueryModel(args->Get("model"), header);
    return client.QueryWorkload(args->Get("workload"), header.target(),
                                static_cast<int>(*limit));
  }
  if (command == "export") {
    if (positional.size() != 2) return Usage("export needs exactly one model file");
    if (!args->Has("output")) return Usage("export needs -o OUT.gtco");
    std::string path = positional[1];
    header.set_model_name(path.substr(path.find_last_of('/') + 1));
    gtco::v1::ExportSpec* export_spec = header.mutable_export_spec();
    const std::string isa = args->Get("isa", "host");
    if (header.target() == "cuda") {
      if (args->Has("isa")) return Usage("--isa is for CPU exports; a CUDA export takes --arch");
      export_spec->set_cuda_arch(args->Get("arch"));
    } else if (args->Has("arch")) {
      return Usage("--arch is for CUDA exports (--target cuda)");
    } else if (isa == "host") {
      // By default the artifact is for this machine: its CPU features pick the instruction set
      // and the records measured on the same CPU.
      const target::HardwareInfo host = target::DetectHostCpu();
      for (const std::string& feature : host.cpu_features) export_spec->add_cpu_features(feature);
      export_spec->set_cpu_model(host.cpu_model);
      export_spec->set_cores(host.cores);
    } else {
      export_spec->set_isa(isa);
    }
    export_spec->set_require_tuned(args->Has("require-tuned"));
    export_spec->set_no_verify(args->Has("no-verify"));
    for (const std::string& item : args->GetAll("verify-input")) {
      const size_t equals = item.find('=');
      if (equals == std::string::npos || equals == 0 || equals + 1 == item.size()) {
        return Usage("--verify-input takes INPUT=FILE.npy, not '" + item + "'");
      }
      gtco::v1::NamedArray* array = export_spec->add_verify_inputs();
      array->set_name(item.substr(0, equals));
      std::ifstream file(item.substr(equals + 1), std::ios::binary);
      if (!file) return Usage("--verify-input: cannot read '" + item.substr(equals + 1) + "'");
      std::ostringstream npy;
      npy << file.rdbuf();
      array->set_npy(npy.str());
    }
    if (args->Has("no-verify") && !export_spec->verify_inputs().empty()) {
      return Usage("--verify-input and --no-verify exclude each other");
    }
    return client.Export(path, header, args->Get("output"));
  }
  if (command == "records") {
    if (positional.size() >= 2 && positional[1] == "export") {
      if (positional.size() != 2) return Usage("records export takes no file argument: use -o");
      if (!args->Has("output")) return Usage("records export needs -o OUT.jsonl");
      gtco::v1::ExportRecordsRequest request;
      if (args->Has("target")) request.set_target(args->Get("target"));
      request.set_workload_key(args->Get("workload"));
      request.set_include_failed(args->Has("include-failed"));
      return client.ExportRecords(request, args->Get("output"));
    }
    if (positional.size() >= 2 && positional[1] == "import") {
      if (positional.size() != 3) return Usage("records import needs exactly one file");
      return client.ImportRecords(positional[2]);
    }
    return Usage("records needs 'export -o FILE' or 'import FILE'");
  }
  return Usage("unknown command '" + command + "'");
}

}  // namespace gtco::client
