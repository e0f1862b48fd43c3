#!/usr/bin/python3
"""Plots bench/results/tuning_curve.csv (best latency so far against trials, one column per
search kind, as written by cpu_vs_vendor) to a PNG.

usage: /usr/bin/python3 bench/plot_tuning_curve.py CSV PNG [TITLE]
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


def main():
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
