// A numeric value over time: its value at each step of the current line, drawn as a line chart in
// plain SVG. A step where the value is missing or not a number leaves a gap.

import { svg, el } from "./dom.js";

const WIDTH = 560;
const HEIGHT = 220;
const LEFT = 48;
const BOTTOM = 28;
const TOP = 12;
const RIGHT = 12;

/** Draws `points` (`[{step, label, value}]`, value a number or undefined) for `pointer`. */
export function renderPlot(container, pointer, points) {
  const numbers = points.filter((point) => typeof point.value === "number");
  if (numbers.length === 0) {
    container.replaceChildren(el("p", { class: "empty", text: `no step of the current line has a number at ${pointer}` }));
    return;
  }
  let low = Math.min(...numbers.map((point) => point.value));
  let high = Math.max(...numbers.map((point) => point.value));
  if (low === high) {
    low -= 1;
    high += 1;
  }
  const x = (index) => LEFT + (points.length === 1 ? 0 : (index * (WIDTH - LEFT - RIGHT)) / (points.length - 1));
  const y = (value) => TOP + ((high - value) * (HEIGHT - TOP - BOTTOM)) / (high - low);
  const segments = [];
  let run = "";
  points.forEach((point, index) => {
    if (typeof point.value !== "number") {
      if (run) segments.push(run);
      run = "";
      return;
    }
    run += `${run ? "L" : "M"}${x(index).toFixed(1)},${y(point.value).toFixed(1)} `;
  });
  if (run) segments.push(run);
  const ticks = [low, (low + high) / 2, high];
  const every = Math.max(1, Math.ceil(points.length / 12));
  const chart = svg(
    "svg",
    { class: "plot", viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: "img", "aria-label": `${pointer} over the current line` },
    svg("line", { class: "axis", x1: LEFT, y1: HEIGHT - BOTTOM, x2: WIDTH - RIGHT, y2: HEIGHT - BOTTOM }),
    svg("line", { class: "axis", x1: LEFT, y1: TOP, x2: LEFT, y2: HEIGHT - BOTTOM }),
    ticks.map((tick) => svg("text", { class: "tick", x: LEFT - 6, y: y(tick) + 4, "text-anchor": "end" }, formatNumber(tick))),
    // At most about a dozen step names along the bottom, so they never overlap.
    points.map((point, index) =>
      index % every === 0 || index === points.length - 1
        ? svg("text", { class: "tick", x: x(index), y: HEIGHT - BOTTOM + 16, "text-anchor": "middle" }, point.step === 0 ? "root" : point.label ?? `#${point.step}`)
        : null,
    ),
    segments.map((d) => svg("path", { class: "series", d })),
    points.map((point, index) =>
      typeof point.value === "number"
        ? svg(
            "circle",
            { class: "point", cx: x(index), cy: y(point.value), r: 4, "data-step": point.step, "data-value": point.value },
            svg("title", {}, `${point.label ?? `step ${point.step}`}: ${point.value}`),
          )
        : null,
    ),
  );
  container.replaceChildren(chart);
}

function formatNumber(value) {
  return Number.isInteger(value) ? String(value) : value.toPrecision(4).replace(/\.?0+$/, "");
}
