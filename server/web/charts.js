// Small SVG charts for the GTCO dashboard (no library): a step-line chart with points for tuning
// curves and a stacked bar chart for the scheduler's rounds. Everything is built with DOM calls
// (never markup strings), so names from the server are always text.
"use strict";

(function () {
  const SVG = "http://www.w3.org/2000/svg";
  const PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
                   "#17becf", "#bcbd22", "#7f7f7f"];
  const MARGIN = {left: 64, right: 12, top: 10, bottom: 36};

  function el(name, attributes, parent) {
    const node = document.createElementNS(SVG, name);
    for (const [key, value] of Object.entries(attributes || {})) node.setAttribute(key, value);
    if (parent) parent.appendChild(node);
    return node;
  }

  function text(parent, x, y, content, attributes) {
    const node = el("text", Object.assign({x: x, y: y}, attributes || {}), parent);
    node.textContent = content;
    return node;
  }

  function formatSeconds(seconds) {
    if (!(seconds > 0)) return "-";
    if (seconds < 1e-3) return (seconds * 1e6).toPrecision(3) + " µs";
    if (seconds < 1) return (seconds * 1e3).toPrecision(3) + " ms";
    return seconds.toPrecision(3) + " s";
  }

  // About `count` round tick values over [low, high] on a linear scale.
  function linearTicks(low, high, count) {
    const span = high - low || Math.abs(high) || 1;
    const raw = span / count;
    const magnitude = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map((f) => f * magnitude).find((s) => s >= raw);
    const ticks = [];
    for (let value = Math.ceil(low / step) * step; value <= high + step * 1e-9; value += step) {
      ticks.push(Number(value.toPrecision(12)));
    }
    return ticks;
  }

  // Ticks of a log scale: powers of ten and their 2x and 5x inside [low, high].
  function logTicks(low, high) {
    const ticks = [];
    for (let exponent = Math.floor(Math.log10(low)); exponent <= Math.ceil(Math.log10(high));
         exponent++) {
      for (const factor of [1, 2, 5]) {
        const value = factor * Math.pow(10, exponent);
        if (value >= low && value <= high) ticks.push(value);
      }
    }
    return ticks.length >= 2 ? ticks : [low, high];
  }

  function frame(container, width, height, label) {
    container.replaceChildren();
    const svg = el("svg", {viewBox: `0 0 ${width} ${height}`, width: "100%", role: "img",
                           "aria-label": label, preserveAspectRatio: "xMidYMid meet"});
    container.appendChild(svg);
    return svg;
  }

  // Axes with ticks; returns nothing. scales: {x(v), y(v)}; ticks: {x: [...], y: [...]}.
  function axes(svg, width, height, scales, ticks, format, labels) {
    const bottom = height - MARGIN.bottom;
    el("line", {x1: MARGIN.left, y1: bottom, x2: width - MARGIN.right, y2: bottom,
                class: "axis"}, svg);
    el("line", {x1: MARGIN.left, y1: MARGIN.top, x2: MARGIN.left, y2: bottom, class: "axis"}, svg);
    for (const value of ticks.y) {
      const y = scales.y(value);
      el("line", {x1: MARGIN.left, y1: y, x2: width - MARGIN.right, y2: y, class: "grid"}, svg);
      text(svg, MARGIN.left - 6, y + 4, format.y(value), {class: "tick", "text-anchor": "end"});
    }
    for (const value of ticks.x) {
      const x = scales.x(value);
      el("line", {x1: x, y1: bottom, x2: x, y2: bottom + 4, class: "axis"}, svg);
      text(svg, x, bottom + 16, format.x(value), {class: "tick", "text-anchor": "middle"});
    }
    text(svg, (MARGIN.left + width - MARGIN.right) / 2, height - 4, labels.x,
         {class: "axis-label", "text-anchor": "middle"});
  }

  // A tuning curve. options.series: [{name, color, points: [[trial, s]...], best: [[trial, s]...],
  // width}]; options.trials: the x extent. Points are drawn as dots, `best` as a step line.
  function curveChart(container, options) {
    const width = options.width || 560, height = options.height || 240;
    const svg = frame(container, width, height, options.label || "tuning curve");
    svg.classList.add("curve");
    const values = [];
    for (const series of options.series) {
      for (const [, seconds] of series.points.concat(series.best)) values.push(seconds);
    }
    if (values.length === 0) {
      text(svg, width / 2, height / 2, options.empty || "no successful trial yet",
           {class: "empty", "text-anchor": "middle"});
      return svg;
    }
    const trials = Math.max(1, options.trials);
    let low = Math.min(...values), high = Math.max(...values);
    const log = high / low > 8;  // slow first samples would flatten the improvements otherwise
    if (log) {
      low /= 1.15;
      high *= 1.15;
    } else {
      const pad = (high - low) * 0.08 || high * 0.05;
      low = Math.max(0, low - pad);
      high += pad;
    }
    const x = (trial) => MARGIN.left + (width - MARGIN.left - MARGIN.right) * (trial - 1) /
        Math.max(1, trials - 1);
    const y = (seconds) => {
      const fraction = log ? (Math.log(seconds) - Math.log(low)) / (Math.log(high) - Math.log(low))
                           : (seconds - low) / (high - low);
      return height - MARGIN.bottom - (height - MARGIN.top - MARGIN.bottom) * fraction;
    };
    axes(svg, width, height, {x, y},
         {x: linearTicks(1, trials, 6).filter((t) => t >= 1 && Number.isInteger(t)),
          y: log ? logTicks(low, high) : linearTicks(low, high, 4)},
         {x: (v) => String(v), y: formatSeconds},
         {x: options.xLabel || "trial"});
    for (const series of options.series) {
      const group = el("g", {class: "series", "data-name": series.name}, svg);
      for (const [trial, seconds] of series.points) {
        const dot = el("circle", {cx: x(trial), cy: y(seconds), r: 2.2, fill: series.color,
                                  class: "pt"}, group);
        el("title", {}, dot).textContent =
            `${series.name}: trial ${trial}, ${formatSeconds(seconds)}`;
      }
      if (series.best.length > 0) {
        let path = "";
        series.best.forEach(([trial, seconds], index) => {
          path += index === 0 ? `M${x(trial)},${y(seconds)}`
                              : `H${x(trial)}V${y(seconds)}`;
        });
        el("path", {d: path, stroke: series.color, "stroke-width": series.width || 1.6,
                    fill: "none", class: "best"}, group);
      }
    }
    return svg;
  }

  // Stacked bars. options.bars: [{label, parts: [{key, value, title}]}]; options.colors: key ->
  // color; a part's title is its tooltip.
  function stackedBars(container, options) {
    const width = options.width || 1100, height = options.height || 220;
    const svg = frame(container, width, height, options.label || "bar chart");
    svg.classList.add("bars");
    if (options.bars.length === 0) {
      text(svg, width / 2, height / 2, options.empty || "nothing yet",
           {class: "empty", "text-anchor": "middle"});
      return svg;
    }
    const totals = options.bars.map((bar) => bar.parts.reduce((sum, part) => sum + part.value, 0));
    const high = Math.max(1, ...totals);
    const plotWidth = width - MARGIN.left - MARGIN.right;
    const slot = plotWidth / options.bars.length;
    const barWidth = Math.max(1, slot * 0.8);
    const y = (value) => height - MARGIN.bottom -
        (height - MARGIN.top - MARGIN.bottom) * value / high;
    const x = (index) => MARGIN.left + slot * index + slot / 2;
    const every = Math.max(1, Math.ceil(options.bars.length / 12));
    const xTicks = options.bars.map((_, index) => index).filter((index) => index % every === 0);
    axes(svg, width, height, {x, y}, {x: xTicks, y: linearTicks(0, high, 4)},
         {x: (index) => options.bars[index].label, y: (v) => String(v)},
         {x: options.xLabel || ""});
    options.bars.forEach((bar, index) => {
      let base = 0;
      for (const part of bar.parts) {
        const rect = el("rect", {x: x(index) - barWidth / 2, y: y(base + part.value),
                                 width: barWidth, height: y(base) - y(base + part.value),
                                 fill: options.colors[part.key] || "#999", class: "bar"}, svg);
        el("title", {}, rect).textContent = part.title || `${bar.label}: ${part.key} ${part.value}`;
        base += part.value;
      }
    });
    return svg;
  }

  window.GtcoCharts = {curveChart, stackedBars, formatSeconds, PALETTE};
})();
