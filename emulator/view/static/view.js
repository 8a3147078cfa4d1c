// The aifabric view: one panel per run (a live run, or finished runs side by side).
// Each panel listens to its run's event stream (/api/runs/N/events: info, frames,
// end), draws the topology with Cytoscape.js (positions computed by the server)
// and the series with uPlot. One time slider for all panels; "follow" keeps it
// at the newest frame. window.aifabricView exposes the panels (the tests read it).
"use strict";

const RAMP = [[0, [255, 237, 160]], [0.25, [254, 217, 118]], [0.5, [253, 141, 60]],
              [0.75, [227, 26, 28]], [1, [128, 0, 38]]];
const SATURATED = 0.9;            // a link direction this busy is drawn as saturated
const SCALE_UP_COLOUR = "#0369a1";  // topo draw's scale-up colour
const RAIL_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                      "#e377c2", "#bcbd22", "#17becf"];
const SERIES_COLOURS = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2",
                        "#be185d", "#4d7c0f", "#7c2d12", "#1e3a8a", "#a16207", "#475569"];
const MAX_SERIES = 12;
const CHART_EVERY_MS = 250;

function utilColour(u) {
  u = Math.max(0, Math.min(1, u));
  for (let i = 1; i < RAMP.length; i++) {
    if (u <= RAMP[i][0]) {
      const [a, ca] = RAMP[i - 1], [b, cb] = RAMP[i];
      const f = (u - a) / (b - a);
      const c = ca.map((v, k) => Math.round(v + (cb[k] - v) * f));
      return `rgb(${c[0]},${c[1]},${c[2]})`;
    }
  }
  return "rgb(128,0,38)";
}

function fmtRate(bps) {
  if (bps == null) return "–";
  const units = [[1e9, "Gb/s"], [1e6, "Mb/s"], [1e3, "kb/s"]];
  for (const [k, u] of units) if (Math.abs(bps) >= k) return (bps / k).toFixed(3).replace(/\.?0+$/, "") + " " + u;
  return bps.toFixed(0) + " b/s";
}
function fmtBytes(b) {
  if (b == null) return "–";
  for (const [k, u] of [[1e9, "GB"], [1e6, "MB"], [1e3, "KB"]]) if (Math.abs(b) >= k) return (b / k).toFixed(2) + " " + u;
  return b + " B";
}
function fmtTime(s) {
  if (s == null) return "–";
  if (Math.abs(s) >= 1) return s.toFixed(3) + " s";
  if (Math.abs(s) >= 1e-3) return (s * 1e3).toFixed(3) + " ms";
  return (s * 1e6).toFixed(3) + " µs";
}
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

// -- a chart whose series appear as the run goes (keys of a frame field) --------------
class Chart {
  constructor(parent, title, unit, pick, scale) {
    this.title = title; this.unit = unit; this.pick = pick; this.scale = scale || 1;
    this.keys = []; this.index = new Map(); this.cols = [];
    this.box = el("div", {class: "chart"}, el("h3", {}, title));
    parent.append(this.box);
    this.plot = null; this.times = [];
  }
  add(frame) {
    const values = this.pick(frame) || {};
    for (const key of Object.keys(values)) {
      if (!this.index.has(key) && this.keys.length < MAX_SERIES) {
        this.index.set(key, this.keys.length);
        this.keys.push(key);
        this.cols.push(new Array(this.times.length).fill(null));
        if (this.plot) this.plot.addSeries(this.seriesOpts(this.keys.length - 1));
      }
    }
    this.times.push(frame.t);
    this.cols.forEach((col, i) => {
      const v = values[this.keys[i]];
      col.push(v == null ? (this.fillZero ? 0 : null) : v * this.scale);
    });
  }
  seriesOpts(i) {
    return {label: this.keys[i], stroke: SERIES_COLOURS[i % SERIES_COLOURS.length], width: 1.5,
            points: {show: false}, spanGaps: false};
  }
  render(width, xlabel) {
    if (!this.keys.length) {
      if (!this.note) { this.note = el("div", {class: "note"}, "nothing to show yet"); this.box.append(this.note); }
      return;
    }
    if (this.note) { this.note.remove(); this.note = null; }
    const data = [this.times, ...this.cols];
    if (!this.plot) {
      this.plot = new uPlot({
        width: width, height: 170,
        scales: {x: {time: false}},
        axes: [{label: xlabel, size: 40}, {label: this.unit, size: 60, values: (u, vals) => vals.map(si)}],
        series: [{label: "t"}, ...this.keys.map((_, i) => this.seriesOpts(i))],
        legend: {live: true},
      }, data, this.box);
    } else {
      this.plot.setData(data);
    }
  }
  get points() { return this.cols.reduce((n, c) => n + c.filter(v => v != null).length, 0); }
}

// -- one run -------------------------------------------------------------------------
class RunPanel {
  constructor(view, run) {
    this.view = view; this.id = run.id; this.label = run.label;
    this.frames = []; this.info = null; this.ended = null; this.state = "connecting";
    this.errors = 0; this.cy = null; this.shownSeq = -1; this.selected = null;
    this.box = el("section", {class: "run", "data-run": String(run.id)});
    this.title = el("h2", {}, run.label);
    this.badge = el("span", {class: "state"}, "connecting");
    this.title.append(this.badge);
    this.about = el("div", {class: "about"});
    this.bar = el("div", {}); this.progressText = el("div", {class: "progress-text"});
    this.graphBox = el("div", {class: "graph"});
    this.detail = el("div", {class: "detail"});
    this.now = el("div", {class: "now"});
    this.chartsBox = el("div", {class: "charts"});
    this.summaryBox = el("div", {class: "summary"});
    this.box.append(this.title, this.about, el("div", {class: "progress"}, this.bar),
                    this.progressText, this.graphBox, this.detail, this.now,
                    this.chartsBox, this.summaryBox);
    document.getElementById("runs").append(this.box);
    this.lastRender = 0; this.pending = false;
    this.connect();
  }

  setState(state, text) {
    this.state = state;
    this.badge.className = "state " + state;
    this.badge.textContent = text || state;
  }

  connect() {
    const since = this.frames.length ? this.frames[this.frames.length - 1].seq + 1 : 0;
    this.source = new EventSource(`/api/runs/${this.id}/events?since=${since}`);
    this.source.addEventListener("info", e => { this.errors = 0; this.onInfo(JSON.parse(e.data)); });
    this.source.addEventListener("frames", e => { this.errors = 0; this.onFrames(JSON.parse(e.data)); });
    this.source.addEventListener("end", e => { this.onEnd(JSON.parse(e.data)); });
    this.source.onerror = () => this.onError();
  }

  onError() {
    if (this.ended) return;
    this.errors += 1;
    this.view.reconnects += 1;
    if (this.source.readyState === EventSource.CLOSED || this.errors > 5) {
      // the server is gone for good: the run's process stopped
      this.source.close();
      this.setState("lost", "the run ended (connection lost)");
      this.progressText.textContent += " — the run ended: its process stopped or the connection was lost";
      return;
    }
    this.setState("reconnecting", "reconnecting…");
  }

  onInfo(info) {
    const first = !this.info;
    this.info = info;
    this.about.textContent = [info.name, info.target && `target ${info.target}`,
      info.clock_text, info.description].filter(Boolean).join(" · ");
    if (info.fabric_util) this.about.textContent += ` · fabric links: ${info.fabric_util} (the run keeps no fabric link series)`;
    if (info.state === "running") this.setState("running");
    else if (info.state === "ended") this.setState("running", "replay");
    else this.setState(info.state || "waiting");
    if (!this.cy && info.topology) this.buildGraph(info.topology);  // none while it waits
    if (first) this.buildCharts();
  }

  buildGraph(topo) {
    const style = [
      {selector: "node", style: {"label": "data(label)", "font-size": 9, "text-valign": "center",
        "text-halign": "center", "color": "#1f2937"}},
      {selector: "node[kind = 'switch']", style: {"shape": "round-rectangle", "width": "data(w)",
        "height": "data(h)", "background-color": "#e5e7eb", "border-width": 2, "border-color": "data(colour)"}},
      {selector: "node[kind = 'switch'][role = 'spine'], node[kind = 'switch'][role = 'core'], node[kind = 'switch'][role = 'agg']",
       style: {"background-color": "#4d5b6a", "color": "#fff", "border-color": "#4d5b6a"}},
      {selector: "node[kind = 'server']", style: {"shape": "round-rectangle", "width": "data(w)",
        "height": "data(h)", "background-color": "#f3f4f6", "border-width": 1, "border-color": "#6b7280",
        "text-valign": "bottom", "text-margin-y": -4, "font-size": 8, "z-index": 1}},
      {selector: "node[kind = 'nic']", style: {"shape": "ellipse", "width": 9, "height": 9, "label": "",
        "background-color": "data(colour)",
        "border-width": 1, "border-color": "#fff", "z-index": 3}},
      {selector: "node[kind = 'block']", style: {"shape": "round-rectangle", "width": "data(w)",
        "height": "data(h)", "background-color": "data(fill)", "border-width": 2, "border-color": "data(colour)",
        "text-wrap": "wrap", "font-size": 9, "color": "data(ink)"}},
      {selector: "edge", style: {"curve-style": "bezier", "control-point-step-size": 8, "width": 1.2,
        "line-color": "#c4c9d0", "line-style": "dashed", "target-arrow-shape": "triangle",
        "target-arrow-color": "#c4c9d0", "arrow-scale": 0.5, "z-index": 2}},
      {selector: "edge.busy", style: {"line-style": "solid", "line-color": "data(colour)",
        "target-arrow-color": "data(colour)", "width": "data(width)"}},
      {selector: "edge.paused", style: {"line-style": "dashed", "line-dash-pattern": [6, 3],
        "line-color": "#7c3aed", "target-arrow-color": "#7c3aed", "width": 3.5}},
      {selector: "edge:selected, node:selected", style: {"overlay-color": "#2563eb", "overlay-opacity": 0.25,
        "overlay-padding": 3}},
    ];
    const elements = [...topo.nodes, ...topo.edges].map(x => JSON.parse(JSON.stringify(x)));
    for (const n of elements) {  // rail colours, as topo draw has them
      if (n.data.kind === "nic") n.data.colour = RAIL_COLOURS[n.data.rail % RAIL_COLOURS.length];
      if (n.data.kind === "switch") n.data.colour = (n.data.rail != null && topo.rails) ?
        RAIL_COLOURS[n.data.rail % RAIL_COLOURS.length] : "#4b5563";
      if (n.data.kind === "block") {  // as topo draw --aggregate colours its blocks
        const rail = n.data.rail != null ? RAIL_COLOURS[n.data.rail % RAIL_COLOURS.length] : null;
        const top = ["spine", "core", "agg"].includes(n.data.role);
        const scaleUp = n.data.role === "scale-up" ? SCALE_UP_COLOUR : null;  // under its servers
        n.data.colour = rail || scaleUp || (n.data.role === "servers" ? "#6b7280" : top ? "#4d5b6a" : "#4b5563");
        n.data.fill = rail ? rail + "33" : scaleUp ? "#f1f5f9" : n.data.role === "servers" ? "#f3f4f6" : top ? "#4d5b6a" : "#e5e7eb";
        n.data.ink = top ? "#fff" : "#1f2937";
      }
    }
    this.blocks = !!topo.blocks;
    this.cy = cytoscape({container: this.graphBox, elements: elements, style: style,
                         layout: {name: "preset"}, autoungrabify: true});
    this.cy.fit(undefined, 12);
    this.cy.on("tap", "edge", e => this.select({edge: e.target.id()}));
    this.cy.on("tap", "node[kind = 'switch']", e => this.select({switch: e.target.id()}));
    this.cy.on("tap", "node[kind = 'block']", e => this.select({block: e.target.id()}));
    if (this.blocks) this.about.textContent += ` · ${topo.nodes.length} blocks as topo draw --aggregate draws them: a bundle's colour is its busiest link; click a block or a bundle for its detail`;
  }

  buildCharts() {
    this.charts = {
      queues: new Chart(this.chartsBox, "Queue depth per port and priority", "bytes", f => f.q),
      paused: new Chart(this.chartsBox, "PFC: time paused (share of each interval; switch queues, and hosts' NICs as host:nic:prio)", "%", f => mapVals(f.pfc, v => v[1]), 100),
      pfcFrames: new Chart(this.chartsBox, "PFC: pause frames per second (switch queues sent + received; NICs: XOFF acted on)", "frames/s", f => mapVals(f.pfc, v => v[0])),
      ecnq: new Chart(this.chartsBox, "ECN: packets marked CE per switch queue, per second", "marks/s", f => f.ecnq),
      ecn: new Chart(this.chartsBox, "ECN marks received (CE) and CNPs sent, per second", "per s",
                     f => (f.ecn == null ? null : {"CE marks": f.ecn, "CNPs": f.cnp})),
      rate: new Chart(this.chartsBox, "DCQCN rate per flow (its QPs summed)", "b/s", f => mapVals(f.fl, v => v[0])),
      goodput: new Chart(this.chartsBox, "Goodput per flow", "b/s", f => mapVals(f.fl, v => v[1])),
      fidelity: new Chart(this.chartsBox, "Fidelity of the live run", "µs / %",
                          f => f.fid ? {"lateness p99 µs": f.fid.late_p99_us, "CPU busy %": f.fid.cpu_busy == null ? null : f.fid.cpu_busy * 100} : null),
    };
    // counts per interval: an interval without an entry had none (a line, not gaps)
    for (const c of ["queues", "paused", "pfcFrames", "ecnq"]) this.charts[c].fillZero = true;
  }

  onFrames(frames) {
    const last = this.frames.length ? this.frames[this.frames.length - 1].seq : -1;
    for (const f of frames) {
      if (f.seq <= last) continue;          // never twice, even across a reconnect
      this.frames.push(f);
      for (const c of Object.values(this.charts)) c.add(f);
    }
    this.view.framesChanged();
    this.scheduleRender();
  }

  onEnd(summary) {
    this.ended = summary;
    this.source.close();
    this.setState(summary.error ? "failed" : "ended", summary.error ? "the run ended: failed" : "ended");
    this.renderSummary(summary);
    this.scheduleRender();
  }

  scheduleRender() {
    if (this.pending) return;
    this.pending = true;
    const wait = Math.max(0, CHART_EVERY_MS - (performance.now() - this.lastRender));
    setTimeout(() => { this.pending = false; this.lastRender = performance.now(); this.renderCharts(); }, wait);
  }

  renderCharts() {
    const width = Math.max(300, this.chartsBox.clientWidth - 10);
    const xlabel = this.info ? this.info.clock_text : "t";
    for (const c of Object.values(this.charts)) c.render(width, xlabel);
    // a sim run is exact by construction: no fidelity to watch
    this.charts.fidelity.box.style.display = this.info && this.info.clock === "simulated" ? "none" : "";
    const f = this.frames[this.frames.length - 1];
    if (f && f.prog) {
      const p = f.prog;
      const share = p.of ? Math.min(p.t / p.of, 1) : 0;
      this.bar.style.width = (this.ended ? 100 : share * 100).toFixed(1) + "%";
      let text = `t = ${fmtTime(p.t)}` + (p.of ? ` of ${fmtTime(p.of)}` : "") +
        (this.info && this.info.clock ? ` (${this.info.clock})` : "");
      if (p.total) text += ` · ${fmtBytes(p.acked)} of ${fmtBytes(p.total)} delivered`;
      if (this.info && this.info.time_scale && this.info.time_scale !== 1)
        text += ` · data-centre t = ${fmtTime(p.t / this.info.time_scale)}`;
      this.progressText.textContent = text;
    }
    if (this.selected) this.select(this.selected);
  }

  frameAt(t) {
    // the last frame at or before t
    let lo = 0, hi = this.frames.length - 1, found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (this.frames[mid].t <= t + 1e-12) { found = mid; lo = mid + 1; } else hi = mid - 1;
    }
    return found >= 0 ? this.frames[found] : null;
  }

  show(t) {
    const f = this.frameAt(t);
    if (!this.cy || !f || f.seq === this.shownSeq) return;
    this.shownSeq = f.seq;
    const paused = new Set(f.paused || []);
    this.cy.batch(() => {
      this.cy.edges().forEach(e => {
        const u = (f.util || {})[e.id()] || 0;
        e.data("util", u);
        e.data("colour", utilColour(u));
        e.data("width", 1.5 + 5 * Math.min(u, 1));
        e.toggleClass("busy", u > 0.001);
        e.toggleClass("saturated", u >= SATURATED);
        e.toggleClass("paused", paused.has(e.id()));
      });
    });
    this.renderNow(f);
  }

  renderNow(f) {
    const flows = el("table", {}, el("tr", {}, el("th", {}, "flow"), el("th", {}, "DCQCN rate (QPs summed)"), el("th", {}, "goodput")));
    for (const [id, [rate, good]] of Object.entries(f.fl || {}))
      flows.append(el("tr", {}, el("td", {}, id), el("td", {class: "num"}, fmtRate(rate)), el("td", {class: "num"}, fmtRate(good))));
    const deepest = Object.entries(f.q || {}).filter(([, v]) => v > 0).sort((a, b) => b[1] - a[1]).slice(0, 6);
    const queues = el("table", {}, el("tr", {}, el("th", {}, "queue (switch:port:prio)"), el("th", {}, "depth")));
    for (const [k, v] of deepest) queues.append(el("tr", {}, el("td", {}, k), el("td", {class: "num"}, fmtBytes(v))));
    if (!deepest.length) queues.append(el("tr", {}, el("td", {colspan: "2"}, "no queue")));
    this.now.replaceChildren(el("div", {}, el("h3", {}, `Flows at t = ${fmtTime(f.t)}`), flows),
                             el("div", {}, el("h3", {}, "Deepest queues"), queues));
  }

  select(what) {
    this.selected = what;
    if (this.detailPlot) { this.detailPlot.destroy(); this.detailPlot = null; }
    let title, keys, pick;
    if (what.edge) {
      const e = this.cy.$id(what.edge);
      const back = what.edge.endsWith(">") ? what.edge.slice(0, -1) + "<" : what.edge.slice(0, -1) + ">";
      const src = e.source().id(), dst = e.target().id();
      const a = e.source().data("label").split("\n")[0], b = e.target().data("label").split("\n")[0];
      title = `${e.data("describe")} (${fmtRate(e.data("rate_bps"))}): utilisation of each direction`;
      this.detailUnit = "% of line";
      if (this.blocks) {  // a bundle: its busiest link and its mean, each way
        keys = [`${a} → ${b} busiest`, `${a} → ${b} mean`, `${b} → ${a} busiest`, `${b} → ${a} mean`];
        pick = f => [what.edge, what.edge, back, back].map((id, i) =>
          (((i % 2 ? f.umean : f.util) || {})[id] || 0) * 100);
      } else {
        keys = [`${src} → ${dst}`, `${dst} → ${src}`];
        pick = f => [((f.util || {})[what.edge] || 0) * 100, ((f.util || {})[back] || 0) * 100];
      }
    } else if (what.block) {
      const node = this.cy.$id(what.block);
      const members = node.data("members");
      const mine = new Set(members);
      const deepest = new Map();
      for (const f of this.frames) for (const [k, v] of Object.entries(f.q || {}))
        if (mine.has(k.split(":")[0])) deepest.set(k, Math.max(deepest.get(k) || 0, v));
      keys = [...deepest.entries()].sort((x, y) => y[1] - x[1]).slice(0, MAX_SERIES).map(([k]) => k);
      title = `${node.data("label").replace("\n", " · ")}: ${members.slice(0, 24).join(", ")}` +
        `${members.length > 24 ? ", …" : ""} — the deepest queues of its members`;
      pick = f => keys.map(k => (f.q || {})[k] || 0);
      this.detailUnit = "bytes";
    } else {
      title = `${what.switch}: queue depth of its ports`;
      keys = [...new Set(this.frames.flatMap(f => Object.keys(f.q || {})))].filter(k => k.startsWith(what.switch + ":")).slice(0, MAX_SERIES);
      pick = f => keys.map(k => (f.q || {})[k] || 0);
      this.detailUnit = "bytes";
    }
    const times = this.frames.map(f => f.t);
    const cols = keys.map((_, i) => this.frames.map(f => pick(f)[i]));
    this.detail.replaceChildren(el("h3", {}, title));
    if (!keys.length) { this.detail.append(el("span", {class: "note"}, "nothing queued here yet")); return; }
    this.detailPlot = new uPlot({width: Math.max(300, this.detail.clientWidth - 10), height: 150,
      scales: {x: {time: false}}, axes: [{label: this.info.clock_text}, {label: this.detailUnit, size: 60}],
      series: [{label: "t"}, ...keys.map((k, i) => ({label: k, stroke: SERIES_COLOURS[i], width: 1.5, points: {show: false}}))]},
      [times, ...cols], this.detail);
  }

  renderSummary(s) {
    const box = this.summaryBox;
    box.replaceChildren();
    const verdict = s.error ? `The run ended: ${s.error}` :
      `The run ended${s.partial ? " (partial results)" : ""}.`;
    box.append(el("div", {class: "banner " + (s.error ? "fail" : "")}, verdict));
    const checks = s.checks || [];
    if (checks.length) {
      const t = el("table", {}, el("tr", {}, el("th", {}, "check"), el("th", {}, "found"), el("th", {}, "result")));
      for (const c of checks) t.append(el("tr", {}, el("td", {}, c.description || `${c.metric} ${c.op} ${c.value}`),
        el("td", {class: "num"}, String(c.found)), el("td", {class: c.passed ? "pass" : "fail"}, c.passed ? "pass" : "fail")));
      box.append(el("h3", {}, "Checks"), t);
    }
    const flows = s.flows || [];
    if (flows.length) {
      const t = el("table", {}, el("tr", {}, ...["flow", "src → dst", "size", "done", "FCT", "goodput"].map(h => el("th", {}, h))));
      for (const f of flows) t.append(el("tr", {}, el("td", {}, f.id), el("td", {}, `${f.src} → ${f.dst}`),
        el("td", {class: "num"}, fmtBytes(f.size_bytes)), el("td", {}, f.completed ? "yes" : "no"),
        el("td", {class: "num"}, fmtTime(f.fct_s)), el("td", {class: "num"}, fmtRate(f.goodput_bps))));
      box.append(el("h3", {}, "Flows"), t);
    }
    const totals = s.totals || {};
    const keys = ["drops", "ecn_marked", "cnp_sent", "pfc_tx", "paused_s", "retransmits", "max_link_util", "max_fct_s"];
    const t = el("table", {});
    for (const k of keys) if (k in totals) t.append(el("tr", {}, el("td", {}, k), el("td", {class: "num"}, String(totals[k]))));
    box.append(el("h3", {}, "Totals"), t);
    const fid = s.fidelity || {};
    if (fid.clock) box.append(el("div", {class: "note"}, fid.clock === "virtual" ? `clock: virtual (${fid.rule || "exact"})` :
      `fidelity: ${fid.faithful ? "faithful" : "NOT faithful"}${(fid.reasons || []).length ? " — " + fid.reasons[0] : ""}`));
    for (const e of s.errors || []) box.append(el("div", {class: "note"}, "note: " + e));
  }
}

function si(v) {
  if (v == null) return "";
  for (const [k, u] of [[1e9, "G"], [1e6, "M"], [1e3, "k"]]) if (Math.abs(v) >= k) return +(v / k).toFixed(2) + u;
  return +v.toFixed(3) + "";
}

function mapVals(obj, fn) {
  if (!obj) return null;
  const out = {};
  for (const [k, v] of Object.entries(obj)) out[k] = fn(v);
  return out;
}

// -- the page ------------------------------------------------------------------------
class View {
  constructor() {
    this.panels = []; this.reconnects = 0;
    this.slider = document.getElementById("slider");
    this.follow = document.getElementById("follow");
    this.clock = document.getElementById("clock");
    this.slider.addEventListener("input", () => { this.follow.checked = false; this.showAt(this.sliderTime()); });
    this.follow.addEventListener("change", () => { if (this.follow.checked) this.framesChanged(); });
  }
  async start() {
    const runs = await (await fetch("/api/runs")).json();
    for (const run of runs) this.panels.push(new RunPanel(this, run));
  }
  times() {
    const all = new Set();
    for (const p of this.panels) for (const f of p.frames) all.add(f.t);
    return [...all].sort((a, b) => a - b);
  }
  sliderTime() { return this.grid[Number(this.slider.value)] ?? 0; }
  framesChanged() {
    if (this.busy) return;
    this.busy = true;
    requestAnimationFrame(() => {
      this.busy = false;
      this.grid = this.times();
      this.slider.max = String(Math.max(this.grid.length - 1, 0));
      if (this.follow.checked) this.slider.value = this.slider.max;
      this.showAt(this.sliderTime());
    });
  }
  showAt(t) {
    const clock = this.panels.length && this.panels[0].info ? this.panels[0].info.clock : "";
    this.clock.textContent = `t = ${fmtTime(t)} ${clock ? "(" + clock + ")" : ""}`;
    for (const p of this.panels) p.show(t);
  }
}

window.aifabricView = new View();
window.aifabricView.start();
