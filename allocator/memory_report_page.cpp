// The memory report page: one self-contained HTML file (inline style, script and canvas;
// no network access) around a snapshot's JSON. It draws allocated and reserved bytes over
// time, the allocated bytes stacked by module or op, and, for the moment chosen with a
// slider, the map of every segment with its blocks.
#include <string>

#include "allocator/memory_report.h"

namespace frugal::alloc {

namespace {

const char* const kHead = R"html(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>)html";

const char* const kStyle = R"html(</title>
<style>
body { font: 13px/1.4 system-ui, sans-serif; margin: 16px 24px; color: #222; }
h1 { font-size: 18px; margin: 0 0 4px; }
h2 { font-size: 15px; margin: 18px 0 6px; }
.summary { color: #555; margin-bottom: 8px; }
.controls { margin: 6px 0; }
.controls label { margin-right: 14px; }
#slider { width: 1200px; }
canvas { border: 1px solid #ccc; display: block; }
#legend span { display: inline-block; margin: 2px 12px 2px 0; white-space: nowrap; }
#legend i { display: inline-block; width: 11px; height: 11px; margin-right: 4px; vertical-align: -1px; }
#tip { position: fixed; background: #fffbe6; border: 1px solid #bbb; padding: 4px 6px;
       pointer-events: none; display: none; font-size: 12px; white-space: pre; }
.note { color: #777; font-size: 12px; }
</style></head><body>
<h1 id="title"></h1>
<div class="summary" id="summary"></div>
<div class="controls">colour by:
 <label><input type="radio" name="key" value="module" checked> module</label>
 <label><input type="radio" name="key" value="op"> op</label>
</div>
<h2>Memory over time</h2>
<canvas id="timeline" width="1300" height="320"></canvas>
<div id="legend"></div>
<div class="controls">moment: <input type="range" id="slider" min="0" max="0" value="0"></div>
<div class="controls" id="moment"></div>
<h2>Segments at that moment</h2>
<div class="note">Each row is a segment (an expandable one is drawn up to the highest address it
ever mapped); blocks in use are coloured by their module or op, free cached memory is grey,
address space without memory behind it is white.</div>
<canvas id="segments" width="1300" height="100"></canvas>
<div id="tip"></div>
<script type="application/json" id="snapshot">)html";

const char* const kScript = R"html(</script>
<script>
"use strict";
const snap = JSON.parse(document.getElementById("snapshot").textContent);
const events = (snap.device_traces && snap.device_traces[0]) || [];
const MiB = 1048576;
const fmt = b => b >= MiB ? (b / MiB).toFixed(1) + " MiB" : b >= 1024 ? (b / 1024).toFixed(1) + " KiB" : b + " B";
const hex = a => "0x" + a.toString(16);
document.getElementById("title").textContent = document.title;
let keyName = "module";
const BEFORE = "(allocated before the history)", NONE = "(untagged)";
const tagOf = (x) => (x[keyName] || NONE);

// ---- the state before the first kept event: the final state with every event undone ----
function finalState() {
  const segs = new Map(), live = new Map();
  for (const s of snap.segments) {
    const seg = { address: s.address, size: s.total_size, expandable: !!s.is_expandable,
                  pool: s.segment_type, mapped: [] };
    for (const b of s.blocks) {
      if (seg.expandable && b.state !== "unmapped") seg.mapped.push([b.address, b.address + b.size]);
      if (b.state === "active_allocated" || b.state === "active_pending_free")
        live.set(b.address, { size: b.size, op: b.op, module: b.module });
    }
    seg.mapped = mergeRanges(seg.mapped);
    segs.set(s.address, seg);
  }
  return { segs, live };
}
function mergeRanges(r) {
  r.sort((a, b) => a[0] - b[0]);
  const out = [];
  for (const x of r) {
    if (out.length && out[out.length - 1][1] >= x[0]) out[out.length - 1][1] = Math.max(out[out.length - 1][1], x[1]);
    else out.push([x[0], x[1]]);
  }
  return out;
}
function removeRange(r, lo, hi) {
  const out = [];
  for (const [a, b] of r) {
    if (b <= lo || a >= hi) out.push([a, b]);
    else { if (a < lo) out.push([a, lo]); if (b > hi) out.push([hi, b]); }
  }
  return out;
}
function segmentOf(segs, addr) {
  for (const s of segs.values()) if (addr >= s.address && addr < s.address + s.size) return s;
  return null;
}
// Applies event e forwards (dir = 1) or undoes it (dir = -1).
function step(st, e, dir) {
  const a = e.action;
  if (a === "alloc" || a === "free_completed") {
    const add = (a === "alloc") === (dir > 0);
    if (add) st.live.set(e.addr, { size: e.size, op: e.op, module: e.module });
    else st.live.delete(e.addr);
  } else if (a === "segment_alloc" || a === "segment_free") {
    const add = (a === "segment_alloc") === (dir > 0);
    if (add) st.segs.set(e.addr, { address: e.addr, size: e.size, expandable: false, pool: "", mapped: [] });
    else st.segs.delete(e.addr);
  } else if (a === "segment_map" || a === "segment_unmap") {
    const s = segmentOf(st.segs, e.addr);
    if (!s) return;
    const add = (a === "segment_map") === (dir > 0);
    s.mapped = add ? mergeRanges(s.mapped.concat([[e.addr, e.addr + e.size]])) : removeRange(s.mapped, e.addr, e.addr + e.size);
  }
}
function cloneState(st) {
  const segs = new Map();
  for (const [k, s] of st.segs) segs.set(k, Object.assign({}, s, { mapped: s.mapped.map(r => r.slice()) }));
  return { segs, live: new Map(st.live) };
}
const start = finalState();
for (let i = events.length - 1; i >= 0; --i) step(start, events[i], -1);
// Expandable segments are drawn up to the highest address they ever mapped.
const extent = new Map();
{
  const st = cloneState(start);
  const note = () => { for (const s of st.segs.values()) {
    const hi = s.expandable ? (s.mapped.length ? s.mapped[s.mapped.length - 1][1] - s.address : 0) : s.size;
    extent.set(s.address, Math.max(extent.get(s.address) || 0, hi)); } };
  note();
  for (const e of events) { step(st, e, 1); if (e.action.startsWith("segment")) note(); }
}
function stateAt(index) {  // after event `index` (-1: before the first)
  const st = cloneState(start);
  for (let i = 0; i <= index && i < events.length; ++i) step(st, events[i], 1);
  return st;
}

// ---- timeline: allocated bytes stacked by tag, reserved as a line ----
let series = null, colours = new Map(), order = [];
function palette(i) { return "hsl(" + ((i * 137.5) % 360).toFixed(0) + ", 62%, " + (i % 2 ? 48 : 62) + "%)"; }
function buildSeries() {
  // Pass 1: each tag's peak, to pick the tags drawn in colour; pass 2: per event, the bytes
  // of each drawn tag and of all others together.
  const run = (visit) => {
    const owner = new Map(), bytes = new Map();
    let before = 0;
    for (const [addr, b] of start.live) { owner.set(addr, BEFORE); before += b.size; }
    bytes.set(BEFORE, before);
    visit(null, bytes);
    for (const e of events) {
      if (e.action === "alloc") {
        const t = tagOf(e);
        owner.set(e.addr, t);
        bytes.set(t, (bytes.get(t) || 0) + e.size);
      } else if ((e.action === "free_requested" || e.action === "free_completed") && owner.has(e.addr)) {
        const t = owner.get(e.addr);
        owner.delete(e.addr);
        bytes.set(t, Math.max(0, (bytes.get(t) || 0) - e.size));
      }
      visit(e, bytes);
    }
  };
  const peak = new Map();
  run((e, bytes) => { for (const [k, v] of bytes) if (v > (peak.get(k) || 0)) peak.set(k, v); });
  order = [...peak.keys()].filter(k => peak.get(k) > 0).sort((a, b) => peak.get(b) - peak.get(a));
  const shown = order.slice(0, 14);
  colours = new Map();
  shown.forEach((k, i) => colours.set(k, k === BEFORE ? "#9aa0a6" : palette(i)));
  const index = new Map(shown.map((k, i) => [k, i]));
  const points = [];
  run((e, bytes) => {
    if (!e) return;
    const v = new Float64Array(shown.length + 1);
    for (const [k, b] of bytes) { const i = index.get(k); v[i === undefined ? shown.length : i] += b; }
    points.push({ t: e.time_ns, reserved: e.reserved, allocated: e.allocated, v });
  });
  series = { points, shown, peak };
}
const tl = document.getElementById("timeline"), tctx = tl.getContext("2d");
const PAD_L = 70, PAD_R = 10, PAD_T = 10, PAD_B = 28;
let xOf = null;
function drawTimeline() {
  const W = tl.width, H = tl.height, pts = series.points;
  tctx.clearRect(0, 0, W, H);
  if (!pts.length) {
    tctx.fillText("No history events were recorded: the allocator records them after " +
                  "record_history(max_entries).", PAD_L, 40);
    return;
  }
  const t0 = pts[0].t, t1 = Math.max(pts[pts.length - 1].t, t0 + 1);
  let ymax = 1;
  for (const p of pts) ymax = Math.max(ymax, p.reserved, p.allocated);
  xOf = t => PAD_L + (t - t0) / (t1 - t0) * (W - PAD_L - PAD_R);
  const yOf = v => H - PAD_B - v / ymax * (H - PAD_T - PAD_B);
  // One column per pixel: the state at the event with the most bytes allocated in it.
  const cols = [];
  for (const p of pts) {
    const x = Math.round(xOf(p.t));
    const c = cols.length && cols[cols.length - 1].x === x ? cols[cols.length - 1] : null;
    if (!c) cols.push({ x, p, r: p.reserved });
    else { if (p.allocated > c.p.allocated) c.p = p; c.r = Math.max(c.r, p.reserved); }
  }
  const keys = series.shown.concat(["other"]);
  let base = cols.map(() => 0);
  for (let j = 0; j < keys.length; ++j) {
    const k = keys[j];
    const top = cols.map((c, i) => base[i] + c.p.v[j]);
    tctx.beginPath();
    cols.forEach((c, i) => { const y = yOf(top[i]); i ? tctx.lineTo(c.x, y) : tctx.moveTo(c.x, y); });
    for (let i = cols.length - 1; i >= 0; --i) tctx.lineTo(cols[i].x, yOf(base[i]));
    tctx.closePath();
    tctx.fillStyle = k === "other" ? "#d0d0d0" : colours.get(k);
    tctx.fill();
    base = top;
  }
  tctx.beginPath();
  cols.forEach((c, i) => { const y = yOf(c.r); i ? tctx.lineTo(c.x, y) : tctx.moveTo(c.x, y); });
  tctx.strokeStyle = "#000"; tctx.lineWidth = 1.5; tctx.stroke();
  // axes
  tctx.fillStyle = "#333"; tctx.strokeStyle = "#999"; tctx.lineWidth = 1; tctx.font = "11px sans-serif";
  for (let i = 0; i <= 4; ++i) {
    const v = ymax * i / 4, y = yOf(v);
    tctx.beginPath(); tctx.moveTo(PAD_L - 4, y); tctx.lineTo(W - PAD_R, y); tctx.globalAlpha = 0.25; tctx.stroke(); tctx.globalAlpha = 1;
    tctx.fillText(fmt(Math.round(v)), 4, y + 4);
  }
  for (let i = 0; i <= 5; ++i) {
    const t = t0 + (t1 - t0) * i / 5, x = xOf(t);
    tctx.fillText(((t - t0) / 1e6).toFixed(1) + " ms", Math.min(x, W - 50), H - 8);
  }
  tctx.fillText("black line: reserved; areas: allocated by " + keyName, PAD_L + 8, PAD_T + 12);
  // the chosen moment
  const m = events[+slider.value];
  if (m) { const x = xOf(m.time_ns); tctx.strokeStyle = "#d00"; tctx.lineWidth = 2;
           tctx.beginPath(); tctx.moveTo(x, PAD_T); tctx.lineTo(x, H - PAD_B); tctx.stroke(); }
}
function drawLegend() {
  const el = document.getElementById("legend");
  el.innerHTML = "";
  const add = (colour, text) => { const s = document.createElement("span"); const i = document.createElement("i");
    i.style.background = colour; s.appendChild(i); s.appendChild(document.createTextNode(text)); el.appendChild(s); };
  for (const k of series.shown) add(colours.get(k), k + " (peak " + fmt(series.peak.get(k)) + ")");
  if (order.length > series.shown.length) add("#d0d0d0", "other (" + (order.length - series.shown.length) + ")");
}

// ---- the segment map at the chosen moment ----
const sg = document.getElementById("segments"), sctx = sg.getContext("2d");
let hit = [];  // rectangles for the tooltip
function drawSegments() {
  const index = +slider.value;
  const st = stateAt(index);
  const segs = [...st.segs.values()].sort((a, b) => a.address - b.address);
  const ROW = 26, LABEL = 250, W = sg.width;
  sg.height = Math.max(60, segs.length * ROW + 10);
  sctx.clearRect(0, 0, W, sg.height);
  sctx.font = "11px sans-serif";
  let widest = 1;
  for (const s of segs) widest = Math.max(widest, extent.get(s.address) || s.size);
  const lives = [...st.live.entries()].sort((a, b) => a[0] - b[0]);
  hit = [];
  segs.forEach((s, r) => {
    const y = 5 + r * ROW, span = Math.max(extent.get(s.address) || s.size, 1);
    const width = Math.max(40, (W - LABEL - 10) * span / widest);
    const xOfA = a => LABEL + (a - s.address) / span * width;
    sctx.fillStyle = "#333";
    sctx.fillText((s.expandable ? "expandable " : "") + (s.pool || "") + " " + hex(s.address) + "  " + fmt(span), 4, y + 15);
    // address space, then mapped memory, then blocks in use
    sctx.fillStyle = "#fff"; sctx.fillRect(LABEL, y, width, ROW - 6);
    sctx.fillStyle = "#e4e4e4";
    if (s.expandable) for (const [a, b] of s.mapped) sctx.fillRect(xOfA(a), y, Math.max(1, xOfA(b) - xOfA(a)), ROW - 6);
    else sctx.fillRect(LABEL, y, width, ROW - 6);
    for (const [addr, b] of lives) {
      if (addr < s.address || addr >= s.address + s.size) continue;
      const k = tagOf(b), x0 = xOfA(addr), w = Math.max(1, xOfA(addr + b.size) - x0);
      sctx.fillStyle = colours.get(k) || "#b0b0b0";
      sctx.fillRect(x0, y, w, ROW - 6);
      sctx.strokeStyle = "rgba(0,0,0,0.35)"; sctx.strokeRect(x0 + 0.5, y + 0.5, w - 1, ROW - 7);
      hit.push({ x0, x1: x0 + w, y0: y, y1: y + ROW - 6, text: hex(addr) + "  " + fmt(b.size) +
                 "\nmodule: " + (b.module || "-") + "\nop: " + (b.op || "-") });
    }
    sctx.strokeStyle = "#888"; sctx.strokeRect(LABEL + 0.5, y + 0.5, width - 1, ROW - 7);
  });
  const e = events[index];
  document.getElementById("moment").textContent = e ?
    "event " + (index + 1) + " of " + events.length + " at " + (e.time_ns / 1e6).toFixed(3) + " ms: " + e.action + " " +
    fmt(e.size) + (e.module ? " in " + e.module : "") + (e.op ? " (" + e.op + ")" : "") +
    "; allocated " + fmt(e.allocated) + ", reserved " + fmt(e.reserved) : "no events";
}
const tip = document.getElementById("tip");
sg.addEventListener("mousemove", ev => {
  const r = sg.getBoundingClientRect(), x = ev.clientX - r.left, y = ev.clientY - r.top;
  const h = hit.find(h => x >= h.x0 && x <= h.x1 && y >= h.y0 && y <= h.y1);
  if (!h) { tip.style.display = "none"; return; }
  tip.textContent = h.text; tip.style.display = "block";
  tip.style.left = (ev.clientX + 12) + "px"; tip.style.top = (ev.clientY + 12) + "px";
});
sg.addEventListener("mouseleave", () => { tip.style.display = "none"; });

// ---- wiring ----
const slider = document.getElementById("slider");
slider.max = Math.max(0, events.length - 1);
// Start at the moment of peak allocated memory.
let peakAt = 0;
events.forEach((e, i) => { if (e.allocated > events[peakAt].allocated) peakAt = i; });
slider.value = peakAt;
tl.addEventListener("click", ev => {
  if (!xOf || !events.length) return;
  const x = ev.clientX - tl.getBoundingClientRect().left;
  let best = 0;
  events.forEach((e, i) => { if (Math.abs(xOf(e.time_ns) - x) < Math.abs(xOf(events[best].time_ns) - x)) best = i; });
  slider.value = best; redraw();
});
slider.addEventListener("input", () => { drawTimeline(); drawSegments(); });
for (const r of document.querySelectorAll("input[name=key]"))
  r.addEventListener("change", () => { keyName = r.value; buildSeries(); redraw(); });
function redraw() { drawTimeline(); drawLegend(); drawSegments(); }
let peakAllocated = 0, peakReserved = 0;
for (const e of events) { peakAllocated = Math.max(peakAllocated, e.allocated); peakReserved = Math.max(peakReserved, e.reserved); }
const h = snap.history || {};
document.getElementById("summary").textContent =
  "device " + snap.device + "; now allocated " + fmt(snap.allocated) + ", reserved " + fmt(snap.reserved) +
  "; over the history: peak allocated " + fmt(peakAllocated) + ", peak reserved " + fmt(peakReserved) +
  "; events kept " + (h.kept || 0) + " of " + (h.recorded || 0) + " recorded (ring of " + (h.max_entries || 0) + ")";
if (location.hash === "#op") {  // a link can open the page coloured by op
  keyName = "op";
  document.querySelector("input[value=op]").checked = true;
}
buildSeries();
redraw();
</script></body></html>
)html";

// Text inside <title>, and JSON inside <script>: neither may close its element early.
std::string escape_title(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '<')
      out += "&lt;";
    else if (c == '&')
      out += "&amp;";
    else
      out += c;
  }
  return out;
}

std::string escape_script(const std::string& json) {
  std::string out;
  out.reserve(json.size());
  for (std::size_t i = 0; i < json.size(); ++i) {
    if (json[i] == '<' && i + 1 < json.size() && json[i + 1] == '/') {
      out += "<\\/";  // the same string in JSON
      ++i;
    } else {
      out += json[i];
    }
  }
  return out;
}

}  // namespace

std::string memory_report_html(const std::string& snapshot_json, const std::string& title) {
  std::string page = kHead;
  page += escape_title(title);
  page += kStyle;
  page += escape_script(snapshot_json);
  page += kScript;
  return page;
}

}  // namespace frugal::alloc
