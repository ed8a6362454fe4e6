// The evaluation chart: grouped bars (one group per metric, one bar per
// configuration), laid out by a pure function and drawn as SVG.
import type { EvalDto } from "./api";

export const METRICS = ["recall_1", "recall_3", "recall_5", "recall_10", "mrr_10", "ndcg_10"] as const;
export const METRIC_LABELS: Record<(typeof METRICS)[number], string> = {
  recall_1: "R@1",
  recall_3: "R@3",
  recall_5: "R@5",
  recall_10: "R@10",
  mrr_10: "MRR@10",
  ndcg_10: "nDCG@10",
};

export interface Bar {
  metric: string;
  config: string;
  value: number;
  x: number;
  y: number;
  width: number;
  height: number;
  series: number;
}

/** Bar geometry for `results` in a `width`×`height` plot area (values 0..1). */
export function layoutBars(results: EvalDto[], width: number, height: number): Bar[] {
  const groupWidth = width / METRICS.length;
  const barWidth = (groupWidth * 0.8) / Math.max(results.length, 1);
  const bars: Bar[] = [];
  METRICS.forEach((metric, m) => {
    results.forEach((result, s) => {
      const value = Math.max(0, Math.min(1, result.metrics[metric] ?? 0));
      const barHeight = value * height;
      bars.push({ metric, config: result.name, value, x: m * groupWidth + groupWidth * 0.1 + s * barWidth, y: height - barHeight, width: barWidth, height: barHeight, series: s });
    });
  });
  return bars;
}

const SVG = "http://www.w3.org/2000/svg";

function svg(tag: string, attrs: Record<string, string | number>, text?: string): SVGElement {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}

/** The chart as an SVG element with a legend. */
export function drawChart(results: EvalDto[]): SVGElement {
  const [width, height, top, left, bottom] = [640, 220, 24, 32, 40];
  const root = svg("svg", { viewBox: `0 0 ${width + left} ${height + top + bottom}`, role: "img", class: "chart" });
  for (const tick of [0, 0.25, 0.5, 0.75, 1]) {
    const y = top + height - tick * height;
    root.append(svg("line", { x1: left, x2: left + width, y1: y, y2: y, class: "grid" }), svg("text", { x: 0, y: y + 4, class: "tick" }, tick.toFixed(2)));
  }
  for (const bar of layoutBars(results, width, height)) {
    const rect = svg("rect", { x: left + bar.x, y: top + bar.y, width: bar.width - 2, height: bar.height, class: `series-${bar.series % 6}` });
    rect.append(svg("title", {}, `${bar.config} ${METRIC_LABELS[bar.metric as keyof typeof METRIC_LABELS]}: ${bar.value.toFixed(3)}`));
    root.append(rect);
  }
  METRICS.forEach((metric, m) => {
    const x = left + (m + 0.5) * (width / METRICS.length);
    root.append(svg("text", { x, y: top + height + 16, class: "label", "text-anchor": "middle" }, METRIC_LABELS[metric]));
  });
  results.forEach((r, s) => {
    const x = left + s * 150;
    root.append(svg("rect", { x, y: 4, width: 12, height: 12, class: `series-${s % 6}` }), svg("text", { x: x + 16, y: 14, class: "label" }, r.name));
  });
  return root;
}
