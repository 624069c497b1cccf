// tesserad live view: reads /events (one JSON snapshot a second), turns
// successive totals into rates, draws sparklines as inline SVG.
"use strict";
const HISTORY = 60;
const state = { last: null, hist: {} };

function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = String(text);
  return e;
}

function dur(ms) {
  const s = Math.max(0, Math.floor(ms / 1000));
  const d = Math.floor(s / 86400), h = Math.floor(s % 86400 / 3600);
  const m = Math.floor(s % 3600 / 60), r = s % 60;
  return (d ? d + "d " : "") + String(h).padStart(2, "0") + ":" +
    String(m).padStart(2, "0") + ":" + String(r).padStart(2, "0");
}

function spark(values, w, h) {
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("class", "spark");
  svg.setAttribute("width", w);
  svg.setAttribute("height", h);
  const max = Math.max(1, ...values);
  const step = values.length > 1 ? w / (HISTORY - 1) : 0;
  const pts = values.map((v, i) =>
    (i * step).toFixed(1) + "," + (h - 1 - (v / max) * (h - 2)).toFixed(1));
  const pl = document.createElementNS(ns, "polyline");
  pl.setAttribute("points", pts.join(" "));
  svg.appendChild(pl);
  return svg;
}

// Latency histogram since start: one bar per bucket (counts from the
// cumulative `[le, count]` pairs), the bucket bound in the bar's title.
function histogram(buckets) {
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("class", "hist");
  const w = 4, h = 24;
  svg.setAttribute("width", Math.max(1, buckets.length * w));
  svg.setAttribute("height", h);
  const n = buckets.map((b, i) => b[1] - (i ? buckets[i - 1][1] : 0));
  const max = Math.max(1, ...n);
  n.forEach((v, i) => {
    const r = document.createElementNS(ns, "rect");
    const bh = v > 0 ? Math.max(1, (v / max) * (h - 1)) : 0;
    r.setAttribute("x", i * w);
    r.setAttribute("y", (h - bh).toFixed(1));
    r.setAttribute("width", w - 1);
    r.setAttribute("height", bh.toFixed(1));
    const t = document.createElementNS(ns, "title");
    const le = buckets[i][0];
    t.textContent = "≤ " + (le == null ? "∞" : (le * 1e6).toPrecision(3) + " µs") + ": " + v;
    r.appendChild(t);
    svg.appendChild(r);
  });
  return svg;
}

function render(s) {
  const prev = state.last;
  const dt = prev ? (s.time_ms - prev.time_ms) / 1000 : 0;
  const body = document.querySelector("#peers tbody");
  body.textContent = "";
  for (const p of s.peers) {
    const old = prev && prev.peers.find(q => q.name === p.name);
    const rate = old && dt > 0 ? Math.max(0, (p.updates_in - old.updates_in) / dt) : 0;
    const h = state.hist[p.name] || (state.hist[p.name] = []);
    if (prev) { h.push(rate); if (h.length > HISTORY) h.shift(); }
    const tr = el("tr", { "data-peer": p.name });
    tr.appendChild(el("td", { class: "name" }, p.name));
    tr.appendChild(el("td", { class: "neighbor" }, p.neighbor));
    tr.appendChild(el("td", { class: "as" }, p.remote_as));
    tr.appendChild(el("td", { class: "state state-" + p.bgp_state }, p.bgp_state));
    tr.appendChild(el("td", { class: "uptime" }, dur(s.time_ms - p.since_ms)));
    tr.appendChild(el("td", { class: "received" }, p.received));
    tr.appendChild(el("td", { class: "accepted" }, p.accepted));
    tr.appendChild(el("td", { class: "exported" }, p.exported));
    tr.appendChild(el("td", { class: "rate" }, rate.toFixed(1)));
    const td = el("td", { class: "history" });
    td.appendChild(spark(h, 180, 24));
    tr.appendChild(td);
    body.appendChild(tr);
  }
  document.getElementById("rib-prefixes").textContent = s.rib.prefixes;
  document.getElementById("rib-paths").textContent = s.rib.paths;
  document.getElementById("rib-rss").textContent =
    s.rib.rss_bytes == null ? "–" : (s.rib.rss_bytes / 1048576).toFixed(1) + " MiB";
  document.getElementById("rib-bpp").textContent =
    s.rib.bytes_per_path == null ? "–" : s.rib.bytes_per_path;
  const sb = document.querySelector("#stages tbody");
  sb.textContent = "";
  for (const st of s.stages) {
    const old = prev && prev.stages.find(q => q.stage === st.stage);
    const dn = old ? st.count - old.count : 0;
    const ds = old ? st.sum_seconds - old.sum_seconds : 0;
    const tr = el("tr", { "data-stage": st.stage });
    tr.appendChild(el("td", {}, st.stage));
    tr.appendChild(el("td", {}, dt > 0 ? (dn / dt).toFixed(1) : "–"));
    tr.appendChild(el("td", {}, dn > 0 ? (ds / dn * 1e6).toFixed(1) + " µs" : "–"));
    const hd = el("td", { class: "histogram" });
    hd.appendChild(histogram(st.buckets || []));
    tr.appendChild(hd);
    sb.appendChild(tr);
  }
  renderDataplane(s, prev, dt);
  renderCluster(s, prev, dt);
  state.last = s;
}

function rateOf(cur, old, dt) {
  return old != null && dt > 0 ? Math.max(0, (cur - old) / dt) : 0;
}

function push(key, v) {
  const h = state.hist[key] || (state.hist[key] = []);
  h.push(v);
  if (h.length > HISTORY) h.shift();
  return h;
}

function sum(obj) {
  let n = 0;
  for (const k in obj) n += obj[k];
  return n;
}

// Dataplane panel: per-core packets/s with a sparkline, drops by reason
// over all cores. Hidden when no dataplane runs.
function renderDataplane(s, prev, dt) {
  const sec = document.getElementById("dataplane");
  const dp = s.dataplane;
  sec.hidden = !dp;
  if (!dp) return;
  document.getElementById("dp-graph").textContent = "graph " + dp.graph + ", " + dp.cores.length + " cores";
  const pdp = prev && prev.dataplane;
  const body = document.querySelector("#dp-cores tbody");
  body.textContent = "";
  const reasons = {}, oldReasons = {};
  for (const c of dp.cores) {
    const o = pdp && pdp.cores.find(q => q.core === c.core);
    const rx = rateOf(c.rx, o && o.rx, dt), tx = rateOf(c.tx, o && o.tx, dt);
    const dr = rateOf(sum(c.drops), o && sum(o.drops), dt);
    const h = o ? push("core" + c.core, rx) : (state.hist["core" + c.core] || []);
    const tr = el("tr", { "data-core": c.core });
    tr.appendChild(el("td", { class: "core" }, c.core));
    tr.appendChild(el("td", { class: "rx-rate" }, rx.toFixed(0)));
    tr.appendChild(el("td", { class: "tx-rate" }, tx.toFixed(0)));
    tr.appendChild(el("td", { class: "drop-rate" }, dr.toFixed(0)));
    const td = el("td", { class: "history" });
    td.appendChild(spark(h, 180, 24));
    tr.appendChild(td);
    body.appendChild(tr);
    for (const r in c.drops) reasons[r] = (reasons[r] || 0) + c.drops[r];
    if (o) for (const r in o.drops) oldReasons[r] = (oldReasons[r] || 0) + o.drops[r];
  }
  const db = document.querySelector("#dp-drops tbody");
  db.textContent = "";
  for (const r of Object.keys(reasons).sort()) {
    if (!reasons[r]) continue;
    const tr = el("tr", { "data-reason": r });
    tr.appendChild(el("td", {}, r));
    tr.appendChild(el("td", { class: "rate" }, rateOf(reasons[r], pdp ? (oldReasons[r] || 0) : null, dt).toFixed(1)));
    tr.appendChild(el("td", { class: "total" }, reasons[r]));
    db.appendChild(tr);
  }
}

// Cluster panel: the other nodes, their BFD state and the fabric load
// this node sends them. Hidden when no cluster runs.
function renderCluster(s, prev, dt) {
  const sec = document.getElementById("cluster");
  const k = s.cluster;
  sec.hidden = !k;
  if (!k) return;
  document.getElementById("cluster-self").textContent =
    "this node " + k.node + " at " + k.fabric_address + ", mode " + k.mode;
  const pk = prev && prev.cluster;
  const body = document.querySelector("#cluster-nodes tbody");
  body.textContent = "";
  for (const n of k.nodes) {
    const o = pk && pk.nodes.find(q => q.node === n.node);
    const dg = rateOf(n.datagrams, o && o.datagrams, dt);
    const bits = rateOf(n.bytes, o && o.bytes, dt) * 8 / 1e6;
    const h = o ? push("node" + n.node, dg) : (state.hist["node" + n.node] || []);
    const tr = el("tr", { "data-node": n.node });
    tr.appendChild(el("td", { class: "node" }, n.node));
    tr.appendChild(el("td", { class: "fabric" }, n.fabric_address));
    tr.appendChild(el("td", { class: "bfd state-" + (n.bfd || "none") }, n.bfd || "–"));
    tr.appendChild(el("td", { class: "live" }, n.live ? "yes" : "no"));
    tr.appendChild(el("td", { class: "dgram-rate" }, dg.toFixed(0)));
    tr.appendChild(el("td", { class: "mbps" }, bits.toFixed(2)));
    const td = el("td", { class: "history" });
    td.appendChild(spark(h, 180, 24));
    tr.appendChild(td);
    body.appendChild(tr);
  }
}

// `/?frames=N`: close the stream after N snapshots (a still capture, as
// for headless browsers that wait for the network to go idle).
const FRAMES = Number(new URLSearchParams(location.search).get("frames")) || 0;

function connect() {
  const es = new EventSource("/events");
  const c = document.getElementById("conn");
  let seen = 0;
  es.addEventListener("snapshot", ev => {
    c.textContent = "live";
    render(JSON.parse(ev.data));
    seen += 1;
    if (FRAMES && seen >= FRAMES) { es.close(); c.textContent = "stopped after " + seen + " snapshots"; }
  });
  es.onerror = () => { c.textContent = "disconnected, retrying"; };
}

async function lookup(q) {
  const out = document.getElementById("lookup-result");
  out.textContent = "";
  if (!q) return;
  try {
    const r = await fetch("/routes/prefix?prefix=" + encodeURIComponent(q));
    const j = await r.json();
    if (!r.ok) { out.appendChild(el("p", { class: "err" }, j.error || r.status)); return; }
    if (!j.routes.length) { out.appendChild(el("p", {}, "no route")); return; }
    const t = el("table", { id: "lookup-table" });
    const head = el("tr");
    for (const h of ["", "network", "from", "next hop", "AS path", "local pref", "MED", "communities", "RPKI", "ASPA"])
      head.appendChild(el("th", {}, h));
    t.appendChild(head);
    for (const rt of j.routes) {
      const tr = el("tr", rt.primary ? { class: "best" } : {});
      tr.appendChild(el("td", {}, rt.primary ? "*" : ""));
      tr.appendChild(el("td", {}, rt.network));
      tr.appendChild(el("td", {}, rt.from_protocol));
      tr.appendChild(el("td", {}, rt.bgp.next_hop));
      tr.appendChild(el("td", {}, rt.bgp.as_path.join(" ")));
      tr.appendChild(el("td", {}, rt.bgp.local_pref == null ? "" : rt.bgp.local_pref));
      tr.appendChild(el("td", {}, rt.bgp.med == null ? "" : rt.bgp.med));
      tr.appendChild(el("td", {}, rt.bgp.communities.map(c => "(" + c.join(",") + ")").join(" ")));
      // Origin validation and ASPA with [rpki]; "-" where not verified.
      tr.appendChild(el("td", { class: "rpki" }, rt.rpki || "-"));
      tr.appendChild(el("td", { class: "aspa" }, rt.aspa || "-"));
      t.appendChild(tr);
    }
    out.appendChild(t);
  } catch (e) {
    out.appendChild(el("p", { class: "err" }, String(e)));
  }
}

document.getElementById("lookup").addEventListener("submit", ev => {
  ev.preventDefault();
  lookup(document.getElementById("lookup-q").value.trim());
});

// `/?q=ADDR`: look it up at once (a link to a lookup).
const Q = new URLSearchParams(location.search).get("q");
if (Q) { document.getElementById("lookup-q").value = Q; lookup(Q.trim()); }

connect();
