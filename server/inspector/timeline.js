// The history tree (`GET /v1/games/{id}/log`) drawn as a graph in SVG: the root at the left, each step
// one column right of its parent, siblings (swipes, edits) on rows of their own. Each step shows its
// label or id and its change count; the current line is drawn bold and the current step ringed.

import { svg } from "./dom.js";

const COLUMN = 96;
const ROW = 60;
const PAD = 24;

/** Steps by id with their children, the root (0) included, from a log answer. */
export function treeOf(log) {
  const steps = new Map([[0, { id: 0, parent: null, label: null, changes: 0, kids: [], applied: true, current: log.current === 0 }]]);
  for (const step of log.steps) steps.set(step.id, { ...step, kids: [] });
  for (const step of log.steps) steps.get(step.parent ?? 0)?.kids.push(step.id);
  for (const step of steps.values()) step.kids.sort((a, b) => a - b);
  return steps;
}

/** The steps from the root to `id`, root first. */
export function lineTo(steps, id) {
  const line = [];
  for (let at = steps.get(id); at; at = at.parent === null ? null : steps.get(at.parent ?? 0)) {
    line.push(at.id);
    if (at.id === 0) break;
  }
  return line.reverse();
}

/** Draws the tree; `onPick(step)` is called when a step is clicked. */
export function renderTimeline(container, log, { selected, onPick }) {
  const steps = treeOf(log);
  const place = new Map();
  let rows = 0;
  let depthMax = 0;
  // Depth-first without recursion (a timeline can be thousands of steps deep).
  const stack = [[0, 0]];
  while (stack.length) {
    const [id, depth] = stack.pop();
    const step = steps.get(id);
    depthMax = Math.max(depthMax, depth);
    // A leaf takes a new row; a parent waits for its first child's.
    place.set(id, { depth, row: step.kids.length === 0 ? rows++ : -1 });
    for (let index = step.kids.length - 1; index >= 0; index--) stack.push([step.kids[index], depth + 1]);
  }
  // A parent sits on its first child's row.
  const byDepth = [...place.entries()].sort((a, b) => b[1].depth - a[1].depth);
  for (const [id, at] of byDepth) {
    if (at.row === -1) at.row = place.get(steps.get(id).kids[0]).row;
  }
  const x = (id) => PAD + place.get(id).depth * COLUMN;
  const y = (id) => PAD + place.get(id).row * ROW;
  const edges = [];
  const nodes = [];
  for (const step of steps.values()) {
    if (step.id !== 0) {
      const parent = step.parent ?? 0;
      const bold = step.applied && steps.get(parent).applied;
      edges.push(
        svg("path", {
          class: bold ? "edge applied" : "edge",
          d: `M${x(parent)},${y(parent)} V${y(step.id)} H${x(step.id)}`,
        }),
      );
    }
    const classes = ["step"];
    if (step.applied) classes.push("applied");
    if (step.current) classes.push("current");
    if (step.id === selected) classes.push("selected");
    const name = step.id === 0 ? "root" : step.label ?? `#${step.id}`;
    nodes.push(
      svg(
        "g",
        {
          class: classes.join(" "),
          "data-step": step.id,
          "data-label": step.label ?? "",
          transform: `translate(${x(step.id)},${y(step.id)})`,
          tabindex: 0,
          role: "button",
          onclick: () => onPick(step),
          onkeydown: (event) => event.key === "Enter" && onPick(step),
        },
        svg("title", {}, `step ${step.id}${step.label ? ` “${step.label}”` : ""}: ${step.changes} change${step.changes === 1 ? "" : "s"}${step.current ? " (current)" : ""}`),
        svg("circle", { r: step.current ? 9 : 7 }),
        svg("text", { class: "name", y: -13, "text-anchor": "middle" }, name.length > 12 ? `${name.slice(0, 11)}…` : name),
        step.id === 0 ? null : svg("text", { class: "count", y: 22, "text-anchor": "middle" }, `${step.changes}Δ`),
      ),
    );
  }
  const width = PAD * 2 + depthMax * COLUMN + 40;
  const height = PAD * 2 + Math.max(rows - 1, 0) * ROW + 20;
  container.replaceChildren(
    svg("svg", { class: "timeline", width, height, viewBox: `-20 -10 ${width} ${height}`, role: "img", "aria-label": "the history tree" }, edges, nodes),
  );
}
