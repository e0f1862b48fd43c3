// One simulated user of the farm: its own channel, looping over a weighted mix of RPCs.
#include "bench/load/load_client.h"

#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace gtco::bench {
namespace {

constexpr const char* kOpNames[kLoadOpCount] = {"submit", "watch", "status", "list", "query"};

bool IsTerminal(const std::string& state) {
  return state == "done" || state == "failed" || state == "cancelled";
}

double MillisecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

absl::Status ToAbsl(const grpc::Status& status) {
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

}  // namespace

absl::StatusOr<OpMix> OpMix::Parse(const std::string& text) {
  OpMix mix;
  int total = 0;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    std::vector<std::string> name_weight = absl::StrSplit(part, '=');
    int weight = -1;
    if (name_weight.size() != 2 || !absl::SimpleAtoi(name_weight[1], &weight) || weight < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--mix expects OP=WEIGHT,... with non-negative integer weights, e.g. "
                       "submit=1,watch=2,query=5,status=4,list=1; got '",
                       part, "'"));
    }
    int op = 0;
    while (op < kLoadOpCount && name_weight[0] != kOpNames[op]) ++op;
    if (op == kLoadOpCount) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--mix: unknown op '", name_weight[0], "'; expected submit, watch, status, list, query"));
    }
    mix.weights_[op] = weight;
    total += weight;
  }
  if (total == 0) return absl::InvalidArgumentError("--mix: every weight is zero");
  return mix;
}

LoadOp OpMix::Pick(std::mt19937_64& rng) const {
  int total = 0;
  for (int weight : weights_) total += weight;
  int ticket = std::uniform_int_distribution<int>(0, total - 1)(rng);
  for (int op = 0; op < kLoadOpCount; ++op) {
    if (ticket < weights_[op]) return static_cast<LoadOp>(op);
    ticket -= weights_[op];
  }
  return LoadOp::kQuery;  // unreachable: the tickets cover the weights
}

std::string OpMix::ToString() const {
  std::vector<std::string> parts;
  for (int op = 0; op < kLoadOpCount; ++op) {
    parts.push_back(absl::StrCat(kOpNames[op], "=", weights_[op]));
  }
  return absl::StrJoin(parts, ",");
}

void TunedKeys::AddFrom(const gtco::v1::JobStatus& job) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const gtco::v1::TaskStatus& task : job.tasks()) {
    if (task.best_seconds() > 0 && known_.insert(task.workload_key()).second) {
      keys_.push_back(task.workload_key());
    }
  }
}

std::string TunedKeys::Pick(std::mt19937_64& rng) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (keys_.empty()) return "";
  return keys_[std::uniform_int_distribution<size_t>(0, keys_.size() - 1)(rng)];
}

LoadClient::LoadClient(const LoadConfig& config, int index, std::string background_job_id,
                       TunedKeys* tuned_keys)
    : config_(config),
      team_(absl::StrFormat("load-%03d", index)),
      background_job_id_(std::move(background_job_id)),
      tuned_keys_(tuned_keys),
      rng_(0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(index + 1)) {
  grpc::ChannelArguments args;
  // A connection of its own, as separate users would have (gRPC otherwise shares one
  // subchannel among channels with the same target and arguments).
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetMaxReceiveMessageSize(64 * 1024 * 1024);
  channel_ = grpc::CreateCustomChannel(config_.address, grpc::InsecureChannelCredentials(), args);
  stub_ = gtco::v1::ClientService::NewStub(channel_);
}

bool LoadClient::Connect(std::chrono::system_clock::time_point deadline) {
  return channel_->WaitForConnected(deadline);
}

void LoadClient::Prepare(grpc::ClientContext* context, int seconds) const {
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(seconds));
  if (!config_.token.empty()) context->AddMetadata("authorization", "Bearer " + config_.token);
}

void LoadClient::Run(std::chrono::steady_clock::time_point end) {
  while (std::chrono::steady_clock::now() < end) {
    RunOp(config_.mix.Pick(rng_));
    if (config_.think_ms > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(config_.think_ms));
    }
  }
}

void LoadClient::RunOp(LoadOp op) {
  if (op != LoadOp::kSubmit && op != LoadOp::kList && last_job_id_.empty()) op = LoadOp::kSubmit;
  switch (op) {
    case LoadOp::kSubmit:
      (void)Submit(config_.model_name, config_.model_bytes, config_.budget);
      return;
    case LoadOp::kWatch: {
      // The client's own job while it runs; else the long job keeping the farm busy.
      bool own = !last_job_terminal_ || background_job_id_.empty();
      (void)Watch(own ? last_job_id_ : background_job_id_, config_.watch_seconds);
      return;
    }
    case LoadOp::kStatus:
      GetJob();
      return;
    case LoadOp::kList:
      ListJobs();
      return;
    case LoadOp::kQuery:
      Query();
      return;
  }
}

absl::StatusOr<gtco::v1::JobStatus> LoadClient::Submit(const std::string& model_name,
                                                       const std::string& model_bytes,
                                                       int64_t budget) {
  grpc::ClientContext context;
  Prepare(&context, config_.timeout_seconds);
  gtco::v1::SubmitReply reply;
  auto start = std::chrono::steady_clock::now();
  auto writer = stub_->Submit(&context, &reply);
  gtco::v1::ModelChunk chunk;
  gtco::v1::SubmitHeader* header = chunk.mutable_header();
  header->set_model_name(model_name);
  header->set_target(config_.target);
  header->set_budget(budget);
  header->set_team(team_);
  if (writer->Write(chunk)) {
    chunk.Clear();
    chunk.set_data(model_bytes);
    writer->Write(chunk);
  }
  writer->WritesDone();
  grpc::Status status = writer->Finish();
  stats_.Record(RpcKind::kSubmit, MillisecondsSince(start), status);
  if (!status.ok()) return ToAbsl(status);
  if (model_bytes == config_.model_bytes) {
    last_job_id_ = reply.job().job_id();
    last_job_terminal_ = IsTerminal(reply.job().state());
  }
  tuned_keys_->AddFrom(reply.job());
  return reply.job();
}

absl::StatusOr<gtco::v1::JobStatus> LoadClient::Watch(const std::string& job_id, int seconds) {
  grpc::ClientContext context;
  Prepare(&context, seconds);
  gtco::v1::WatchJobRequest request;
  request.set_job_id(job_id);
  auto start = std::chrono::steady_clock::now();
  auto reader = stub_->WatchJob(&context, request);
  gtco::v1::JobStatus update;
  gtco::v1::JobStatus last;
  double first_update_ms = 0;
  int64_t updates = 0;
  while (reader->Read(&update)) {
    if (updates++ == 0) first_update_ms = MillisecondsSince(start);
    last = update;
  }
  grpc::Status status = reader->Finish();
  // Our own deadline ends a stream that was answering: the expected way to stop following.
  bool followed =
      updates > 0 && (status.ok() || status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED);
  if (!followed) {
    if (status.ok()) status = grpc::Status(grpc::StatusCode::UNKNOWN, "stream ended empty");
    stats_.Record(RpcKind::kWatchJob, 0, status);
    return ToAbsl(status);
  }
  stats_.Record(RpcKind::kWatchJob, first_update_ms, grpc::Status::OK);
  bool terminal = IsTerminal(last.state());
  stats_.RecordWatchEnd(terminal, updates);
  if (job_id == last_job_id_) last_job_terminal_ = terminal;
  tuned_keys_->AddFrom(last);
  return last;
}

absl::StatusOr<gtco::v1::JobStatus> LoadClient::Cancel(const std::string& job_id) {
  grpc::ClientContext context;
  Prepare(&context, config_.timeout_seconds);
  gtco::v1::CancelJobRequest request;
  request.set_job_id(job_id);
  gtco::v1::JobStatus reply;
  grpc::Status status = stub_->CancelJob(&context, request, &reply);
  if (!status.ok()) return ToAbsl(status);
  return reply;
}

void LoadClient::GetJob() {
  grpc::ClientContext context;
  Prepare(&context, config_.timeout_seconds);
  gtco::v1::GetJobRequest request;
  request.set_job_id(last_job_id_);
  gtco::v1::JobStatus reply;
  auto start = std::chrono::steady_clock::now();
  grpc::Status status = stub_->GetJob(&context, request, &reply);
  stats_.Record(RpcKind::kGetJob, MillisecondsSince(start), status);
  if (!status.ok()) return;
  last_job_terminal_ = IsTerminal(reply.state());
  tuned_keys_->AddFrom(reply);
}

void LoadClient::ListJobs() {
  grpc::ClientContext context;
  Prepare(&context, config_.timeout_seconds);
  gtco::v1::ListJobsRequest request;
  request.set_team(team_);
  gtco::v1::ListJobsReply reply;
  auto start = std::chrono::steady_clock::now();
  grpc::Status status = stub_->ListJobs(&context, request, &reply);
  stats_.Record(RpcKind::kListJobs, MillisecondsSince(start), status);
}

void LoadClient::Query() {
  // Alternate the two queries; a workload query needs a key that has a measurement.
  std::string key = query_model_next_ ? "" : tuned_keys_->Pick(rng_);
  query_model_next_ = !query_model_next_;
  grpc::ClientContext context;
  Prepare(&context, config_.timeout_seconds);
  gtco::v1::QueryReply reply;
  auto start = std::chrono::steady_clock::now();
  if (key.empty()) {
    auto writer = stub_->QueryModel(&context, &reply);
    gtco::v1::ModelChunk chunk;
    chunk.mutable_header()->set_target(config_.target);
    if (writer->Write(chunk)) {
      chunk.Clear();
      chunk.set_data(config_.model_bytes);
      writer->Write(chunk);
    }
    writer->WritesDone();
    grpc::Status status = writer->Finish();
    stats_.Record(RpcKind::kQueryModel, MillisecondsSince(start), status);
    return;
  }
  gtco::v1::QueryWorkloadRequest request;
  request.set_workload_key(key);
  request.set_target(config_.target);
  request.set_limit(3);
  grpc::Status status = stub_->QueryWorkload(&context, request, &reply);
  stats_.Record(RpcKind::kQueryWorkload, MillisecondsSince(start), status);
}

}  // namespace gtco::bench
