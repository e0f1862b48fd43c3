#!/usr/bin/python3
"""Plots bench/results/tuning_curve.csv (best latency so far against trials, one column per
search kind and seed, as written by cpu_vs_vendor) to a PNG, or with --summary prints the
acceptance comparison as markdown: for each seed, the trials model-guided search needs to reach
95% of its own final best (final / 0.95), against the trials random search with the same seed
needs to reach that same latency; it holds when the model needs at most a third.

usage: /usr/bin/python3 bench/plot_tuning_curve.py CSV PNG [TITLE]
       /usr/bin/python3 bench/plot_tuning_curve.py --summary CSV [REPORT.md]
With REPORT.md the summary goes into the report (cpu_vs_vendor.md) under "### Model-guided vs
random", before "## Best schedules" (replacing an earlier one), instead of to stdout.
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read_curves(path):
    """{column: [(trial, best_us)]}; columns are "<search>_s<seed>_best_us" (or "<search>_best_us"
    from older runs)."""
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    curves = {}
    for column in rows[0].keys():
        if column == "trial":
            continue
        points = [(int(row["trial"]), float(row[column])) for row in rows if row[column]]
        curves[column.replace("_best_us", "")] = points
    return curves


def search_of(column):
    head, _, seed = column.rpartition("_s")
    return head if head and seed.isdigit() else column


def trials_to_reach(points, target):
    for trial, best in points:
        if best <= target:
            return trial
    return None


def summary(curves):
    """Markdown: one row per guided run, paired with random search of the same seed."""
    runs = {}
    for column, points in curves.items():
        search = search_of(column)
        runs.setdefault(search, {})[column[len(search) + 2:] or "1"] = points
    random = runs.get("random", {})
    lines = ["| search | seed | final best µs | trials to 95% of it | random's trials to the same "
             "latency | ratio | ≤ 1/3 |", "|---|---|---|---|---|---|---|"]
    verdicts = {}
    for search, seeds in runs.items():
        if search == "random":
            continue
        for seed, points in sorted(seeds.items()):
            if not points or seed not in random:
                continue
            budget = max(trial for trial, _ in random[seed])
            target = points[-1][1] / 0.95
            guided = trials_to_reach(points, target)
            baseline = trials_to_reach(random[seed], target)
            baseline_cell = str(baseline) if baseline else f"never in {budget} (> {budget})"
            effective = baseline if baseline else budget + 1
            ratio = guided / effective
            holds = guided * 3 <= effective
            verdicts.setdefault(search, []).append((holds, ratio))
            lines.append(f"| {search} | {seed} | {points[-1][1]:.1f} | {guided} | {baseline_cell} "
                         f"| {ratio:.2f} | {'yes' if holds else '**no**'} |")
    lines.append("")
    for search, results in verdicts.items():
        ratios = sorted(ratio for _, ratio in results)
        median = ratios[len(ratios) // 2] if len(ratios) % 2 else \
            (ratios[len(ratios) // 2 - 1] + ratios[len(ratios) // 2]) / 2
        held = sum(1 for holds, _ in results if holds)
        lines.append(f"- {search}: holds on {held} of {len(results)} seeds; median ratio "
                     f"{median:.2f} (≤ 0.33 needed)")
    return "\n".join(lines) + "\n"


SUMMARY_HEADING = "### Model-guided vs random"


def insert_summary(report_path, text):
    with open(report_path) as handle:
        report = handle.read()
    start = report.find(SUMMARY_HEADING)
    if start >= 0:
        end = report.find("\n## ", start)
        report = report[:start] + (report[end + 1:] if end >= 0 else "")
    block = f"{SUMMARY_HEADING} (from tuning_curve.csv)\n\n{text}\n"
    anchor = report.find("## Best schedules")
    report = report[:anchor] + block + report[anchor:] if anchor >= 0 else report + "\n" + block
    with open(report_path, "w") as handle:
        handle.write(report)


def main():
    if len(sys.argv) in (3, 4) and sys.argv[1] == "--summary":
        text = summary(read_curves(sys.argv[2]))
        if len(sys.argv) == 3:
            print(text, end="")
            return
        insert_summary(sys.argv[3], text)
        print(f"wrote the summary into {sys.argv[3]}")
        return
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    csv_path, png_path = sys.argv[1], sys.argv[2]
    title = sys.argv[3] if len(sys.argv) > 3 else "Tuning curve"
    curves = read_curves(csv_path)
    figure, axes = plt.subplots(figsize=(7.5, 4.5), dpi=120)
    colors = {}
    for column, points in curves.items():
        if not points:
            continue
        search = search_of(column)
        first = search not in colors
        if first:
            colors[search] = f"C{len(colors)}"
        trials, best = zip(*points)
        axes.step(trials, best, where="post", color=colors[search], alpha=0.8,
                  label=search if first else None)
    axes.set_xlabel("trials (measured candidates)")
    axes.set_ylabel("best latency so far (µs, log scale)")
    axes.set_yscale("log")
    axes.set_title(title)
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(title="search (one line per seed)")
    figure.tight_layout()
    figure.savefig(png_path)
    print(f"wrote {png_path}")


if __name__ == "__main__":
    main()
