// Terminal and JSON rendering for gtco-client.
#include "client/format.h"

#include <google/protobuf/util/json_util.h>

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace gtco::client {

std::string FormatSeconds(double seconds) {
  if (seconds <= 0) return "-";
  if (seconds < 1e-3) return absl::StrFormat("%.1f us", seconds * 1e6);
  if (seconds < 1) return absl::StrFormat("%.3f ms", seconds * 1e3);
  if (seconds < 120) return absl::StrFormat("%.1f s", seconds);
  return absl::StrFormat("%.1f min", seconds / 60);
}

std::string FormatJob(const gtco::v1::JobStatus& job) {
  std::string text = absl::StrFormat(
      "job %s  %s  team %s  target %s  %s  trials %d/%d (%d failed)  est. latency %s  ETA %s\n",
      job.job_id(), job.model_name(), job.team(), job.target(), job.state(), job.trials_done(),
      job.budget(), job.trials_failed(), FormatSeconds(job.estimated_latency_seconds()),
      job.eta_seconds() < 0 ? "?" : FormatSeconds(job.eta_seconds()));
  for (const auto& task : job.tasks()) {
    std::string trials = task.state() == "from_database"
                             ? "from database"
                             : absl::StrFormat("%d/%d", task.trials_done(), task.trials_allotted());
    absl::StrAppend(
        &text,
        absl::StrFormat("  %-4s %-44s x%-2d %-14s best %-10s %8s  ETA %-8s %s\n",
                        task.task_id().substr(task.task_id().rfind('.') + 1),
                        task.description().substr(0, 44), task.weight(), trials,
                        FormatSeconds(task.best_seconds()),
                        task.gflops() > 0 ? absl::StrFormat("%.1f GF/s", task.gflops()) : "",
                        task.eta_seconds() < 0 ? "?" : FormatSeconds(task.eta_seconds()),
                        task.state()));
  }
  if (!job.error().empty()) absl::StrAppend(&text, "  error: ", job.error(), "\n");
  return text;
}

std::string FormatExplain(const gtco::v1::JobStatus& job) {
  std::string text = absl::StrFormat("scheduler %s, %d candidates per round\n", job.scheduler(),
                                     job.round_size());
  for (const auto& task : job.tasks()) {
    absl::StrAppend(&text, absl::StrFormat("%s  %s  x%d  %s  trials %d  best %s  expected gain "
                                           "%.3g s/trial\n",
                                           task.task_id(), task.description(), task.weight(),
                                           task.state(), task.trials_done(),
                                           FormatSeconds(task.best_seconds()),
                                           task.expected_gain_seconds()));
    std::string hardware;
    // Per hardware class: the fastest mapping measured and what it gained over the runner-up.
    const gtco::v1::MappingStatus* fastest = nullptr;
    const gtco::v1::MappingStatus* runner_up = nullptr;
    auto close_class = [&] {
      if (fastest != nullptr && runner_up != nullptr) {
        absl::StrAppend(&text,
                        absl::StrFormat("    fastest: %s, %.2fx %s's best\n", fastest->name(),
                                        runner_up->best_seconds() / fastest->best_seconds(),
                                        runner_up->name()));
      }
      fastest = runner_up = nullptr;
    };
    for (const auto& mapping : task.mappings()) {
      // A task measured by workers of several hardware classes has spaces for each.
      if (!mapping.hardware().empty() && mapping.hardware() != hardware) {
        close_class();
        hardware = mapping.hardware();
        absl::StrAppend(&text, "   on ", hardware, ":\n");
      }
      if (mapping.applies() && mapping.best_seconds() > 0) {
        if (fastest == nullptr || mapping.best_seconds() < fastest->best_seconds()) {
          runner_up = fastest;
          fastest = &mapping;
        } else if (runner_up == nullptr || mapping.best_seconds() < runner_up->best_seconds()) {
          runner_up = &mapping;
        }
      }
      if (!mapping.applies()) {
        absl::StrAppend(&text, absl::StrFormat("    %-12s not applicable: %s\n", mapping.name(),
                                               mapping.reason()));
        continue;
      }
      std::string pruned;
      for (const auto& rule : mapping.pruned()) {
        absl::StrAppend(&pruned, pruned.empty() ? "" : ", ", rule.rule(), " ", rule.count());
      }
      absl::StrAppend(
          &text, absl::StrFormat("    %-12s trials %-5d best %-10s space %d of %d schedules "
                                 "after pruning%s\n",
                                 mapping.name(), mapping.trials(),
                                 FormatSeconds(mapping.best_seconds()), mapping.admitted(),
                                 mapping.considered(),
                                 pruned.empty() ? "" : " (pruned: " + pruned + ")"));
    }
    close_class();
  }
  if (job.plan_size() > 0) {
    absl::StrAppend(&text,
                    "plan choices (per region: the measured alternative of least cost, "
                    "the first while none is measured; '-': too far behind to draw more "
                    "trials):\n");
  }
  for (const auto& choice : job.plan()) {
    absl::StrAppend(&text,
                    absl::StrFormat("  %s  x%d\n", choice.description(), choice.instances()));
    for (const auto& alternative : choice.alternatives()) {
      const char* mark = alternative.chosen() ? "*" : alternative.left_behind() ? "-" : " ";
      absl::StrAppend(
          &text,
          absl::StrFormat(
              "   %s %-18s %-22s %s\n", mark, alternative.name(),
              alternative.measured() ? FormatSeconds(alternative.seconds()) : "not measured yet",
              absl::StrJoin(alternative.tasks(), ", ",
                            [](std::string* out, const gtco::v1::PlanTask& task) {
                              absl::StrAppend(out, task.task_id(), " x", task.count());
                            })));
    }
  }
  if (!job.graph_check().empty()) absl::StrAppend(&text, job.graph_check(), "\n");
  if (job.fallbacks_size() > 0) {
    absl::StrAppend(&text, "fallback steps (no kernel family: run by the reference op library, "
                           "not tuned; an export measures their share of the run):\n");
  }
  for (const auto& fallback : job.fallbacks()) {
    absl::StrAppend(&text, "  ", fallback.op_type(), " at '", fallback.node(), "': ",
                    fallback.reason(), "\n");
  }
  if (job.decisions_size() > 0) absl::StrAppend(&text, "latest scheduler decisions:\n");
  for (const auto& decision : job.decisions()) absl::StrAppend(&text, "  ", decision, "\n");
  return text;
}

std::string FormatJobLine(const gtco::v1::JobStatus& job) {
  return absl::StrFormat("%-13s %-10s %-20s %-6s %-10s %6d/%-6d est. latency %s", job.job_id(),
                         job.team(), job.model_name(), job.target(), job.state(),
                         job.trials_done(), job.budget(),
                         FormatSeconds(job.estimated_latency_seconds()));
}

std::string FormatQuery(const gtco::v1::QueryReply& reply, bool model_query) {
  std::string text;
  for (const auto& record : reply.records()) {
    if (!record.tuned()) {
      absl::StrAppend(&text, absl::StrFormat("%-42s %-40s not tuned yet\n", record.workload_key(),
                                             record.description().substr(0, 40)));
      continue;
    }
    // "(3x)": the mean of three measurements of the trace.
    const std::string times =
        record.measurements() > 1 ? absl::StrFormat(" (%dx)", record.measurements()) : "";
    absl::StrAppend(
        &text, absl::StrFormat("%-42s %-40s %s%-10s %7.1f GF/s  +-%s  %s\n", record.workload_key(),
                               record.description().substr(0, 40),
                               model_query ? absl::StrFormat("x%-2d ", record.weight()) : "",
                               FormatSeconds(record.median_seconds()) + times, record.gflops(),
                               FormatSeconds(record.stddev_seconds()), record.trace()));
  }
  if (model_query) {
    absl::StrAppend(&text, "estimated model latency (the chosen plan: runs x best): ",
                    FormatSeconds(reply.estimated_latency_seconds()), "\n");
  }
  return text;
}

std::string ToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  std::string json;
  (void)google::protobuf::util::MessageToJsonString(message, &json, options);
  return json;
}

std::string FormatVerification(const gtco::v1::ExportSummary& summary) {
  const gtco::v1::Verification& check = summary.verification();
  std::string text;
  if (check.status() == "passed") {
    double worst = 0;
    std::string worst_name;
    for (const auto& output : check.outputs()) {
      if (worst_name.empty() || output.max_error() > worst) {
        worst = output.max_error();
        worst_name = output.name();
      }
    }
    text = absl::StrCat("verified against the reference interpreter of the ONNX graph: ",
                        check.outputs_size(), " output", check.outputs_size() == 1 ? "" : "s",
                        " on ", check.input_sets(), " input set",
                        check.input_sets() == 1 ? "" : "s", " (seed ", check.seed(),
                        "), worst relative error ", absl::StrFormat("%.2g", worst), " ('",
                        worst_name, "')\n");
  } else if (check.status() == "skipped") {
    text = absl::StrCat("not verified: ", check.reason(), "\n");
  }
  if (summary.fallbacks_size() > 0) {
    double seconds = 0;
    for (const auto& fallback : summary.fallbacks()) seconds += fallback.seconds();
    absl::StrAppend(&text, summary.fallbacks_size(), " node",
                    summary.fallbacks_size() == 1 ? " runs" : "s run",
                    " as fallback steps (no kernel family: not tuned)");
    if (summary.run_seconds() > 0) {
      absl::StrAppend(&text, absl::StrFormat(", %.1f%% of the run's %s",
                                             100 * seconds / summary.run_seconds(),
                                             FormatSeconds(summary.run_seconds())));
    }
    absl::StrAppend(&text, ":\n");
    for (const auto& fallback : summary.fallbacks()) {
      absl::StrAppend(&text, "  ", fallback.op_type(), " at '", fallback.node(), "'",
                      fallback.seconds() > 0 ? absl::StrCat(" ", FormatSeconds(fallback.seconds()))
                                             : "",
                      ": ", fallback.reason(), "\n");
    }
  }
  return text;
}

}  // namespace gtco::client
