// What the export tests share: options for this host and a lookup with no records.
#pragma once

#include <optional>
#include <string>

#include "common/export/model_export.h"
#include "common/target/target.h"

namespace gtco::exporter {

/// Export options for this host's CPU (its features and cores), default schedules otherwise.
inline ExportOptions HostOptions() {
  ExportOptions options;
  const target::HardwareInfo host = target::DetectHostCpu();
  options.cpu_features = host.cpu_features;
  options.cores = host.cores;
  return options;
}

/// A schedule lookup that finds no record: every kernel gets its default schedule.
inline const ScheduleLookup kNoRecords =
    [](const ir::Workload&, const std::string&) -> absl::StatusOr<std::optional<ChosenSchedule>> {
  return std::nullopt;
};

}  // namespace gtco::exporter
