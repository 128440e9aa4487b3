// KernelWeb charts: <div data-chart="KIND" data-source="ID"> + {{ data|json_script:"ID" }} -> uPlot chart(s)
// with PNG and SVG download buttons (see docs/frontend.md for the JSON each kind reads).
// A kind is a function (data) -> [plot spec]; one spec is one uPlot strip (see `toOpts` and `specSVG`).
import uPlot from "uplot";

const MARK = "kwEnhanced";
const PALETTE = ["#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#ccb974", "#64b5cd", "#2ca02c", "#e377c2", "#17becf"];
const RED = "#cf222e";
const GREY = "#8c959f";
const FONT = '11px system-ui, -apple-system, "Segoe UI", sans-serif';

// ---- chart kinds: data -> list of plot specs --------------------------------------------------------------
// spec = {title?, x: [numbers], xLabels?: [strings] (categorical x), logx?, xlabel?, ylabel?, height?,
//         yInclude?: [numbers always inside the y range], fails?: [x indices marked with a red x], failLabel?,
//         series: [{label, values: [number|null], style: "line"|"points"|"step"|"dash", color?}]}

const turnX = (turns) => turns.map((_, i) => i);
const turnLabels = (turns) => turns.map((t, i) => String(t.label ?? i + 1));
const num = (v) => (typeof v === "number" && Number.isFinite(v) ? v : null);
const pos = (v) => (num(v) != null && v > 0 ? v : null);
const times = (v) => (v == null ? "—" : `${v >= 10 ? v.toFixed(1) : v.toFixed(2)}×`);
const theme0 = "#1f2328";
// 1.2e12 -> "1.2 T": SI prefixes for FLOP/s and B/s.
function si(v) {
  if (v == null || !Number.isFinite(v)) return "—";
  const units = [[1e15, "P"], [1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]];
  for (const [f, p] of units) if (Math.abs(v) >= f) return `${Number((v / f).toPrecision(3))} ${p}`;
  return `${Number(v.toPrecision(3))} `;
}

const KINDS = {
  score(data) {
    const turns = data.turns || [];
    const fails = [];
    turns.forEach((t, i) => t.valid === false && fails.push(i));
    return [
      {
        x: turnX(turns),
        xLabels: turnLabels(turns),
        xlabel: "turn",
        ylabel: data.ylabel || "",
        height: 260,
        fails,
        failLabel: "invalid",
        series: [
          { label: "score", style: "points", color: PALETTE[0], values: turns.map((t) => (t.valid === false ? null : num(t.score))) },
          { label: "best so far", style: "step", color: PALETTE[1], values: turns.map((t) => num(t.best)) },
        ],
      },
    ];
  },

  "size-strips"(data) {
    const turns = data.turns || [];
    const many = (data.sizes || []).length > 4; // many sizes: low strips, one legend at the top
    return (data.sizes || []).map((size, k) => {
      const fails = [];
      turns.forEach((t, i) => t.failed && t.failed[k] && fails.push(i));
      return {
        title: String(size),
        x: turnX(turns),
        xLabels: turnLabels(turns),
        ylabel: "speedup",
        height: many ? 84 : 130,
        legend: !many || k === 0,
        yInclude: [1],
        fails,
        failLabel: "failed",
        series: [
          { label: "1×", style: "dash", color: GREY, values: turns.map(() => 1) },
          { label: "speedup", style: "line", color: PALETTE[0], values: turns.map((t) => num((t.speedups || [])[k])) },
        ],
      };
    });
  },

  // One chart for all sizes: a line per size over turns on a log y axis, the library reference of each size
  // dashed in the same colour, and a grey 1× line. The legend shows the best turn's values until hovered.
  speedup(data) {
    const turns = (data.turns || []).map((l) => ({ label: l }));
    const fails = [];
    (data.failed || []).forEach((f, i) => f && fails.push(i));
    const series = [];
    (data.sizes || []).forEach((s, i) => {
      const color = PALETTE[i % PALETTE.length];
      series.push({ label: String(s.label), style: "line", color, format: times, values: (s.values || []).map(pos) });
      if (pos(s.reference) != null)
        series.push({ label: `${s.label} library`, style: "dash", color, format: times, values: turns.map(() => s.reference) });
    });
    series.push({ label: "baseline (1×)", style: "dash", color: GREY, format: times, values: turns.map(() => 1) });
    const best = Number.isInteger(data.best_index) ? data.best_index : null;
    return [
      {
        x: turnX(turns),
        xLabels: turnLabels(turns),
        xlabel: "turn",
        ylabel: data.ylabel || "speedup (×)",
        yFormat: times,
        logy: true,
        height: 320,
        yInclude: [1],
        fails,
        failLabel: "failed turn",
        legendIdx: best,
        legendX: best != null ? `${turns[best].label} (best)` : "latest",
        series,
      },
    ];
  },

  // Roofline: log-log arithmetic intensity (FLOP/byte) against achieved FLOP/s, the GPU's roofs (memory
  // bandwidth × intensity, capped by each compute peak) and one point per size.
  roofline(data) {
    const roofs = data.roofs || {};
    const bw = pos(roofs.bandwidth);
    const computes = (roofs.compute || []).filter((c) => pos(c.flops) != null);
    const points = (data.points || []).filter((p) => pos(p.intensity) != null && pos(p.flops) != null);
    if (!bw || !computes.length || !points.length) throw new Error("roofline: no roofs or no points");
    const ridges = computes.map((c) => c.flops / bw);
    const ais = points.map((p) => p.intensity);
    const lo = 10 ** Math.floor(Math.log10(Math.min(...ais, ...ridges) / 2));
    const hi = 10 ** Math.ceil(Math.log10(Math.max(...ais, ...ridges) * 2));
    const x = [...new Set([lo, hi, ...ridges, ...ais])].sort((a, b) => a - b);
    const series = computes.map((c, i) => ({
      label: i ? "tensor roof" : "roof",
      style: i ? "dash" : "roof",
      color: i ? GREY : theme0,
      legendText: `${roofs.memory} · ${c.label} · ridge at ${fmt(c.flops / bw)} FLOP/B`,
      values: x.map((v) => Math.min(bw * v, c.flops)),
    }));
    points.forEach((p, i) => {
      const pct = (v, d) => (v == null ? "" : ` · ${v.toFixed(d)}% of peak`);
      series.push({
        label: String(p.size),
        style: "points",
        color: PALETTE[i % PALETTE.length],
        legendText: `${si(p.flops)}FLOP/s${pct(p.flops_pct, 2)} · ${si(p.bandwidth)}B/s${pct(p.bandwidth_pct, 1)}`,
        values: x.map((v) => (v === p.intensity ? p.flops : null)),
      });
    });
    return [
      {
        x,
        logx: true,
        logy: true,
        xlabel: "arithmetic intensity (FLOP/byte, log scale)",
        ylabel: "achieved FLOP/s (log scale)",
        xFormat: (v) => (v >= 1000 ? si(v).trim() : fmt(v)),
        yFormat: (v) => `${si(v)}`,
        yInclude: [Math.min(...points.map((p) => p.flops), bw * lo) / 2, ...computes.map((c) => c.flops * 2)],
        height: 320,
        legendRows: true,
        series,
      },
    ];
  },

  // Per-task values on a categorical x (experiments: best candidate P beside the library reference's P).
  operators(data) {
    const labels = (data.labels || []).map(String);
    const x = labels.map((_, i) => i);
    return [
      {
        x,
        xLabels: labels,
        xlabel: "operator",
        ylabel: data.ylabel || "",
        logy: true,
        yFormat: times,
        legendX: "hover an operator",
        height: 300 + Math.min(120, Math.max(0, ...labels.map((l) => l.length)) * 4),
        yInclude: [1],
        series: [
          { label: "1×", style: "dash", color: GREY, legendText: "1.00×", values: x.map(() => 1) },
          ...(data.series || []).map((s, i) => {
            const values = (s.values || []).map(pos);
            const have = values.filter((v) => v != null);
            const geo = have.length ? Math.exp(have.reduce((a, v) => a + Math.log(v), 0) / have.length) : null;
            return {
              label: String(s.label ?? `series ${i + 1}`),
              style: "points",
              color: PALETTE[i % PALETTE.length],
              legendText: geo == null ? "no value" : `geomean ${times(geo)} over ${have.length}`,
              values,
            };
          }),
        ],
      },
    ];
  },

  lines(data) {
    const cat = !!data.categorical; // x values as evenly spaced categories (e.g. thresholds 0, 1, 2, 4, ... 32)
    const xs = data.x || [];
    return [
      {
        x: cat ? xs.map((_, i) => i) : xs.map(num),
        xLabels: cat ? xs.map((v) => String(v)) : undefined,
        yInclude: Array.isArray(data.yInclude) ? data.yInclude.map(num) : undefined,
        logx: !cat && !!data.logx,
        legendX: xs.length ? `at ${xs[xs.length - 1]}` : "",
        xlabel: data.xlabel || "",
        ylabel: data.ylabel || "",
        height: 300,
        series: (data.series || []).map((s, i) => ({
          label: String(s.label ?? `series ${i + 1}`),
          style: "line",
          color: PALETTE[i % PALETTE.length],
          values: (s.values || []).map(num),
        })),
      },
    ];
  },
};

// ---- uPlot options from a spec ---------------------------------------------------------------------------

function yRange(spec) {
  return (u, min, max) => {
    const inc = (spec.yInclude || []).filter((v) => v != null && (!spec.logy || v > 0));
    let lo = Math.min(...inc, min ?? Infinity);
    let hi = Math.max(...inc, max ?? -Infinity);
    if (!Number.isFinite(lo) || !Number.isFinite(hi)) return spec.logy ? [0.1, 10] : [0, 1];
    if (spec.logy) return [lo / 1.25, hi * 1.25]; // a margin of a quarter step on a log axis, never 0
    const pad = hi > lo ? (hi - lo) * 0.08 : Math.abs(hi) * 0.1 || 1;
    const l = lo >= 0 && lo - pad < 0 ? 0 : lo - pad;
    return [l, hi + pad];
  };
}

// Ticks of a log axis: decades, with 2 and 5 in between when the range spans few decades.
function logTicks(lo, hi) {
  const out = [];
  const decades = Math.log10(hi / lo);
  const steps = decades <= 1.2 ? [1, 1.5, 2, 3, 5, 7] : decades <= 3 ? [1, 2, 5] : [1];
  for (let e = Math.floor(Math.log10(lo)); 10 ** e <= hi; e++)
    for (const m of steps) {
      const v = Number((m * 10 ** e).toPrecision(6));
      if (v >= lo && v <= hi) out.push(v);
    }
  return out;
}

// Category labels: rotated 45° when they would not fit side by side, and thinned so none overlap.
function categoryLayout(spec, width) {
  const longest = Math.max(1, ...spec.xLabels.map((l) => String(l).length));
  const slot = (width - 60) / Math.max(1, spec.xLabels.length);
  const rotate = longest * 6.5 + 8 > slot;
  return { rotate, space: rotate ? 16 : longest * 6.5 + 10, size: rotate ? Math.min(140, 16 + longest * 5) : 30 };
}

// What the legend shows for a series when the cursor is not on the chart: a fixed text, the value at
// the chart's chosen index (the best turn), else the last value; never uPlot's "--".
function restingValue(spec, s) {
  if (s.legendText != null) return s.legendText;
  const f = s.format || spec.yFormat || fmt;
  let i = spec.legendIdx;
  if (i == null || s.values[i] == null) for (i = s.values.length - 1; i >= 0 && s.values[i] == null; i--);
  return i >= 0 && s.values[i] != null ? f(s.values[i]) : "no value";
}

function failMarks(u, spec, failIdx) {
  if (!spec.fails || !spec.fails.length || !u.series[failIdx].show) return;
  const { ctx } = u;
  const r = 4 * devicePixelRatio;
  const y = u.bbox.top + u.bbox.height - r - 2 * devicePixelRatio;
  ctx.save();
  ctx.strokeStyle = RED;
  ctx.lineWidth = 2 * devicePixelRatio;
  ctx.beginPath();
  for (const i of spec.fails) {
    const x = u.valToPos(spec.x[i], "x", true);
    ctx.moveTo(x - r, y - r);
    ctx.lineTo(x + r, y + r);
    ctx.moveTo(x + r, y - r);
    ctx.lineTo(x - r, y + r);
  }
  ctx.stroke();
  ctx.restore();
}

function seriesOpts(spec, s) {
  const f = s.format || spec.yFormat || fmt;
  const resting = restingValue(spec, s);
  const base = { label: s.label, stroke: s.color, spanGaps: false, value: (u, v, si, idx) => (idx == null ? resting : v == null ? "—" : f(v)) };
  if (s.style === "points")
    return { ...base, width: 0, paths: () => null, points: { show: true, size: 8, fill: s.color, stroke: s.color } };
  if (s.style === "step")
    return { ...base, width: 2, paths: uPlot.paths.stepped({ align: 1 }), points: { show: false }, spanGaps: true };
  if (s.style === "dash") return { ...base, width: 1.25, dash: [5, 4], points: { show: false } };
  if (s.style === "roof") return { ...base, width: 2.5, points: { show: false } };
  return { ...base, width: 1.75, points: { show: true, size: 5, fill: s.color } };
}

function toOpts(spec, width, theme, syncKey) {
  const cat = !!spec.xLabels;
  const axis = { stroke: theme.fg, grid: { stroke: theme.grid, width: 1 }, ticks: { stroke: theme.grid, width: 1 }, font: FONT };
  const failIdx = spec.series.length + 1;
  const layout = cat ? categoryLayout(spec, width) : null;
  spec.rotateX = !!(layout && layout.rotate);
  const xRest = spec.legendX || (cat ? "latest" : "");
  const series = [
    {
      label: spec.xlabel || (cat ? "turn" : "x"),
      value: (u, v, si, idx) => (idx == null ? xRest : cat ? spec.xLabels[v] ?? "" : spec.xFormat ? spec.xFormat(v) : fmt(v)),
    },
    ...spec.series.map((s) => seriesOpts(spec, s)),
  ];
  if (spec.fails && spec.fails.length)
    series.push({ label: spec.failLabel || "failed", stroke: RED, paths: () => null, points: { show: false }, value: () => `${spec.fails.length}` });
  const logSplits = (lo, hi) => logTicks(lo, hi);
  return {
    title: spec.title,
    width,
    height: spec.height || 260,
    series,
    scales: {
      x: {
        time: false,
        distr: spec.logx ? 3 : 1,
        log: 10,
        range: cat ? (u, min, max) => [(min ?? 0) - 0.5, (max ?? 0) + 0.5] : spec.logx ? (u, min, max) => [min, max] : undefined,
      },
      y: { distr: spec.logy ? 3 : 1, log: 10, range: yRange(spec) },
    },
    axes: [
      {
        ...axis,
        label: spec.xlabel || undefined,
        labelFont: FONT,
        ...(cat
          ? {
              incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000],
              space: layout.space,
              rotate: layout.rotate ? 45 : 0, // uPlot: 45 ends each label at its tick, running down-left
              size: layout.size,
              values: (u, splits) => splits.map((v) => spec.xLabels[v] ?? ""),
            }
          : spec.logx
            ? { splits: (u) => logSplits(u.scales.x.min, u.scales.x.max), values: (u, splits) => splits.map((v) => (v == null ? "" : (spec.xFormat || fmt)(v))) }
            : {}),
      },
      {
        ...axis,
        label: spec.ylabel || undefined,
        labelFont: FONT,
        size: 62,
        ...(spec.logy ? { splits: (u) => logSplits(u.scales.y.min, u.scales.y.max) } : {}),
        ...(spec.yFormat ? { values: (u, splits) => splits.map((v) => (v == null ? "" : spec.yFormat(v))) } : {}),
      },
    ],
    cursor: syncKey ? { sync: { key: syncKey } } : {},
    legend: { live: true, show: spec.legend !== false },
    hooks: { draw: [(u) => failMarks(u, spec, failIdx)] },
  };
}

function toData(spec) {
  return [spec.x, ...spec.series.map((s) => spec.x.map((_, i) => s.values[i] ?? null)), ...(spec.fails && spec.fails.length ? [spec.x.map(() => null)] : [])];
}

// ---- theme -----------------------------------------------------------------------------------------------

function themeOf(el) {
  const cs = getComputedStyle(el);
  let bg = "";
  for (let n = el; n && n.nodeType === 1 && !bg; n = n.parentElement) {
    const c = getComputedStyle(n).backgroundColor;
    if (c && c !== "transparent" && !/rgba\(.*,\s*0\)$/.test(c)) bg = c;
  }
  const dark = window.matchMedia && matchMedia("(prefers-color-scheme: dark)").matches;
  return { fg: cs.color || "#1d2125", bg: bg || (dark ? "#0d1117" : "#ffffff"), grid: "rgba(128,128,128,0.22)" };
}

// ---- hand-written SVG of the same specs ------------------------------------------------------------------

const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
const f1 = (v) => Math.round(v * 10) / 10;

function niceTicks(lo, hi, count = 5) {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw);
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

const fmt = (v) => (v == null || !Number.isFinite(v) ? "—" : Math.abs(v) >= 1e4 || (v !== 0 && Math.abs(v) < 1e-3) ? v.toExponential(1) : String(Number(v.toPrecision(4))));

function specSVG(spec, u, width, theme) {
  const px = (v, key) => u.valToPos(v, key); // CSS px inside the plotting area
  const bb = { left: u.bbox.left / devicePixelRatio, top: u.bbox.top / devicePixelRatio, w: u.bbox.width / devicePixelRatio, h: u.bbox.height / devicePixelRatio };
  const titleH = spec.title ? 18 : 0;
  const ox = bb.left;
  const oy = bb.top + titleH;
  const rotatedH = spec.rotateX && spec.xLabels ? Math.max(...spec.xLabels.map((l) => String(l).length)) * 4.6 : 0;
  const plotH = bb.top + bb.h + 34 + rotatedH + (spec.xlabel ? 14 : 0);
  const legendY = titleH + plotH + 4;
  const parts = [];
  if (spec.title) parts.push(`<text x="${f1(width / 2)}" y="13" text-anchor="middle" font-weight="600">${esc(spec.title)}</text>`);
  parts.push(`<rect x="${f1(ox)}" y="${f1(oy)}" width="${f1(bb.w)}" height="${f1(bb.h)}" fill="none" stroke="${theme.grid}"/>`);
  // y grid and labels
  const ys = u.scales.y;
  for (const t of spec.logy ? logTicks(ys.min, ys.max) : niceTicks(ys.min, ys.max)) {
    const y = f1(oy + px(t, "y"));
    parts.push(`<line x1="${f1(ox)}" x2="${f1(ox + bb.w)}" y1="${y}" y2="${y}" stroke="${theme.grid}"/>`);
    parts.push(`<text x="${f1(ox - 4)}" y="${y}" text-anchor="end" dominant-baseline="middle">${esc((spec.yFormat || fmt)(t))}</text>`);
  }
  // x labels
  const xs = u.scales.x;
  let xt;
  if (spec.xLabels) {
    const longest = Math.max(1, ...spec.xLabels.map((l) => String(l).length));
    const every = Math.max(1, Math.ceil((spec.x.length * (spec.rotateX ? 16 : longest * 6.5 + 10)) / bb.w));
    xt = spec.x.filter((_, i) => i % every === 0).map((v) => [v, spec.xLabels[v]]);
  } else if (spec.logx && xs.min > 0) {
    xt = logTicks(xs.min, xs.max).map((v) => [v, (spec.xFormat || fmt)(v)]);
  } else xt = niceTicks(xs.min, xs.max, Math.max(2, Math.floor(bb.w / 80))).map((v) => [v, fmt(v)]);
  const xAxisH = spec.rotateX ? 16 + Math.max(1, ...xt.map(([, l]) => String(l).length)) * 4.6 : 18;
  for (const [v, label] of xt) {
    const x = f1(ox + px(v, "x"));
    if (spec.rotateX)
      parts.push(`<text transform="translate(${x} ${f1(oy + bb.h + 10)}) rotate(-45)" text-anchor="end">${esc(label)}</text>`);
    else parts.push(`<text x="${x}" y="${f1(oy + bb.h + 14)}" text-anchor="middle">${esc(label)}</text>`);
  }
  if (spec.xlabel) parts.push(`<text x="${f1(ox + bb.w / 2)}" y="${f1(oy + bb.h + xAxisH + 12)}" text-anchor="middle">${esc(spec.xlabel)}</text>`);
  if (spec.ylabel)
    parts.push(`<text transform="translate(12 ${f1(oy + bb.h / 2)}) rotate(-90)" text-anchor="middle">${esc(spec.ylabel)}</text>`);
  // series
  const pt = (i, s) => [f1(ox + px(spec.x[i], "x")), f1(oy + px(s.values[i], "y"))];
  spec.series.forEach((s, k) => {
    if (!u.series[k + 1].show) return;
    const seg = [];
    let cur = [];
    let prev = null;
    spec.x.forEach((_, i) => {
      const v = s.values[i];
      if (v == null) {
        if (s.style !== "step") (cur.length && seg.push(cur), (cur = []));
        return;
      }
      const [x, y] = pt(i, s);
      if (s.style === "step" && prev) cur.push([x, prev[1]]);
      cur.push([x, y]);
      prev = [x, y];
    });
    if (cur.length) seg.push(cur);
    if (s.style !== "points")
      for (const p of seg)
        parts.push(
          `<polyline fill="none" stroke="${s.color}" stroke-width="${s.style === "step" ? 2 : s.style === "dash" ? 1 : 1.5}"${s.style === "dash" ? ' stroke-dasharray="5 4"' : ""} points="${p.map((q) => q.join(",")).join(" ")}"/>`,
        );
    if (s.style === "points" || s.style === "line")
      spec.x.forEach((_, i) => {
        if (s.values[i] == null) return;
        const [x, y] = pt(i, s);
        parts.push(`<circle cx="${x}" cy="${y}" r="${s.style === "points" ? 3.5 : 2.5}" fill="${s.color}"/>`);
      });
  });
  const hasFails = spec.fails && spec.fails.length && u.series[spec.series.length + 1].show;
  if (hasFails) {
    const y = oy + bb.h - 6;
    const d = spec.fails.map((i) => {
      const x = ox + px(spec.x[i], "x");
      return `M${f1(x - 4)} ${f1(y - 4)}L${f1(x + 4)} ${f1(y + 4)}M${f1(x + 4)} ${f1(y - 4)}L${f1(x - 4)} ${f1(y + 4)}`;
    });
    parts.push(`<path d="${d.join("")}" stroke="${RED}" stroke-width="2" fill="none"/>`);
  }
  // legend
  let lx = ox;
  let ly = legendY;
  const legend = [
    ...spec.series.map((s) => [`${s.label}: ${restingValue(spec, s)}`, s.color]),
    ...(hasFails ? [[`${spec.failLabel || "failed"}: ${spec.fails.length}`, RED]] : []),
  ];
  for (const [label, color] of legend) {
    const w = 24 + label.length * 6;
    if (lx > ox && lx + w > width) (lx = ox), (ly += 16);
    parts.push(`<rect x="${f1(lx)}" y="${f1(ly)}" width="10" height="10" fill="${color}"/>`);
    parts.push(`<text x="${f1(lx + 14)}" y="${f1(ly + 9)}">${esc(label)}</text>`);
    lx += w;
  }
  return { body: parts.join(""), height: ly + 18 };
}

function chartSVG(chart) {
  const { plots, theme } = chart;
  const width = Math.max(...plots.map(({ u }) => u.width));
  let y = 0;
  const groups = plots.map(({ spec, u }) => {
    const g = specSVG(spec, u, width, theme);
    const out = `<g transform="translate(0 ${f1(y)})">${g.body}</g>`;
    y += g.height + 8;
    return out;
  });
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${f1(y)}" viewBox="0 0 ${width} ${f1(y)}" ` +
    `font-family="system-ui, sans-serif" font-size="11" fill="${theme.fg}">` +
    `<rect width="100%" height="100%" fill="${theme.bg}"/>${groups.join("")}</svg>`
  );
}

// ---- PNG: the uPlot canvases stacked, with titles and legends drawn in -----------------------------------

function chartPNG(chart) {
  const { plots, theme } = chart;
  const r = devicePixelRatio;
  const rows = plots.map(({ spec, u }) => {
    const legend = [...spec.series.filter((_, k) => u.series[k + 1].show).map((s) => [`${s.label}: ${restingValue(spec, s)}`, s.color])];
    if (spec.fails && spec.fails.length && u.series[spec.series.length + 1].show) legend.push([spec.failLabel || "failed", RED]);
    return { spec, canvas: u.ctx.canvas, titleH: spec.title ? 18 * r : 0, legend, legendH: 18 * r };
  });
  const canvas = document.createElement("canvas");
  canvas.width = Math.max(...rows.map((x) => x.canvas.width));
  const font = FONT.replace("11px", `${11 * r}px`);
  const ctx = canvas.getContext("2d");
  ctx.font = font;
  // Legend entries flow into as many lines as the width needs: lay them out before sizing the canvas.
  for (const row of rows) {
    let x = 50 * r;
    let line = 0;
    row.placed = row.legend.map(([label, color]) => {
      const w = 24 * r + ctx.measureText(label).width;
      if (x > 50 * r && x + w > canvas.width) (x = 50 * r), line++;
      const at = { label, color, x, line };
      x += w;
      return at;
    });
    row.legendH = 18 * r * (line + 1);
  }
  canvas.height = rows.reduce((h, x) => h + x.titleH + x.canvas.height + x.legendH, 0);
  ctx.fillStyle = theme.bg;
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  ctx.font = font; // resizing the canvas reset the context
  ctx.textBaseline = "middle";
  let y = 0;
  for (const row of rows) {
    if (row.spec.title) {
      ctx.fillStyle = theme.fg;
      ctx.textAlign = "center";
      ctx.fillText(row.spec.title, canvas.width / 2, y + row.titleH / 2);
    }
    y += row.titleH;
    ctx.drawImage(row.canvas, 0, y);
    y += row.canvas.height;
    ctx.textAlign = "left";
    for (const { label, color, x, line } of row.placed) {
      const ly = y + line * 18 * r;
      ctx.fillStyle = color;
      ctx.fillRect(x, ly + 4 * r, 10 * r, 10 * r);
      ctx.fillStyle = theme.fg;
      ctx.fillText(label, x + 14 * r, ly + 9 * r);
    }
    y += row.legendH;
  }
  return canvas.toDataURL("image/png");
}

// ---- wiring ----------------------------------------------------------------------------------------------

function download(url, name) {
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
}

let syncSeq = 0;

function render(el) {
  if (el.dataset[MARK]) return;
  const kind = KINDS[el.dataset.chart];
  const src = el.dataset.source && document.getElementById(el.dataset.source);
  if (!kind || !src) {
    console.error(`data-chart: unknown kind "${el.dataset.chart}" or missing #${el.dataset.source}`);
    return;
  }
  el.dataset[MARK] = "1";
  let specs;
  try {
    specs = kind(JSON.parse(src.textContent));
  } catch (err) {
    console.error(err); // keep the server-rendered fallback
    return;
  }
  const theme = themeOf(el);
  const width = () => Math.max(200, el.clientWidth || 600);
  el.replaceChildren();
  el.classList.add("kw-chart");
  const tools = document.createElement("div");
  tools.className = "kw-chart-tools";
  el.append(tools);
  const syncKey = specs.length > 1 ? `kw-sync-${++syncSeq}` : null;
  const chart = { el, theme, plots: [] };
  for (const spec of specs) {
    const box = document.createElement("div");
    box.className = (specs.length > 1 ? "kw-strip" : "kw-plot") + (spec.legendRows ? " kw-legend-rows" : "");
    el.append(box);
    chart.plots.push({ spec, u: new uPlot(toOpts(spec, width(), theme, syncKey), toData(spec), box) });
  }
  const name = el.dataset.filename || el.dataset.source || "chart";
  for (const [fmtName, make] of [
    ["PNG", () => chartPNG(chart)],
    ["SVG", () => `data:image/svg+xml;charset=utf-8,${encodeURIComponent(chartSVG(chart))}`],
  ]) {
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = fmtName;
    b.title = `Download this chart as ${fmtName}`;
    b.dataset.format = fmtName.toLowerCase();
    b.addEventListener("click", () => download(make(), `${name}.${fmtName.toLowerCase()}`));
    tools.append(b);
  }
  el.kwChart = chart;
  let lastW = width();
  if (window.ResizeObserver)
    new ResizeObserver(() => {
      const w = width();
      if (w === lastW) return;
      lastW = w;
      for (const { u } of chart.plots) u.setSize({ width: w, height: u.height });
    }).observe(el);
}

export function renderAll(root = document) {
  root.querySelectorAll("[data-chart]").forEach(render);
}

window.KWCharts = { renderAll, kinds: KINDS, svg: (el) => chartSVG(el.kwChart), png: (el) => chartPNG(el.kwChart) };
if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", () => renderAll());
else renderAll();
document.addEventListener("htmx:afterSwap", () => renderAll());
