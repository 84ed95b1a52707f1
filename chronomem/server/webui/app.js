// chronomem's local page: calls the JSON API of chronomem/server/ui.py. Plain script, no build step.
// Every value from the store is put in the page as text (textContent), never as HTML.
"use strict";

const CSRF = document.querySelector('meta[name="csrf-token"]').content;
const $ = (id) => document.getElementById(id);
const state = { project: "", first: null, now: null, asof: null, projects: [] };

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (v !== null && v !== undefined) node.setAttribute(k, v);
  }
  for (const c of children) if (c !== null && c !== undefined) node.append(c instanceof Node ? c : String(c));
  return node;
}

function say(text, isError = false) {
  const s = $("status");
  s.textContent = text || "";
  s.className = isError ? "error" : "";
}

async function api(path, params = {}, body = null) {
  const url = new URL(path, location.origin);
  for (const [k, v] of Object.entries(params)) {
    if (Array.isArray(v)) v.forEach((x) => url.searchParams.append(k, x));
    else if (v !== null && v !== undefined && v !== "") url.searchParams.set(k, v);
  }
  const init = body === null ? {} : {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-Chronomem-CSRF": CSRF },
    body: JSON.stringify(body),
  };
  const r = await fetch(url, { credentials: "same-origin", ...init });
  const data = await r.json().catch(() => ({ error: `${r.status} ${r.statusText}` }));
  if (!r.ok) throw new Error(data.error || `${r.status}`);
  return data;
}

const day = (iso) => (iso ? iso.slice(0, 10) : "");
const when = (iso) => (iso ? iso.slice(0, 19).replace("T", " ") : "");

// ------------------------------------------------------------------ tabs and project

function show(tab) {
  for (const b of document.querySelectorAll("#tabs button")) b.classList.toggle("on", b.dataset.tab === tab);
  for (const s of document.querySelectorAll("main > section")) s.hidden = s.id !== tab;
  if (tab === "projects") loadProjects();
  if (tab === "brief") loadBrief();
}

function chooseProject(key) {
  state.project = key;
  $("project").value = key;
  const p = state.projects.find((x) => x.project === key);
  state.first = p && p.first_valid ? new Date(p.first_valid) : null;
  $("export-link").href = `/api/export?project=${encodeURIComponent(key)}`;
  $("export-link").setAttribute("download", `${key}.jsonl`);
  setSlider(1000);
}

async function loadProjects() {
  try {
    const data = await api("/api/projects");
    state.projects = data.projects;
    state.now = new Date(data.now);
    const body = $("project-table").tBodies[0];
    body.replaceChildren();
    const select = $("project");
    select.replaceChildren();
    for (const p of data.projects) {
      select.append(el("option", { value: p.project }, p.project));
      const row = el("tr", { class: p.current ? "current" : "", "data-project": p.project,
        onclick: () => { chooseProject(p.project); show("search"); } },
        el("td", {}, p.project), el("td", { class: "n" }, p.memories), el("td", { class: "n" }, p.current_facts),
        el("td", { class: "n" }, p.superseded), el("td", { class: "n", title: p.stale_anchors === null ? "only the current project's files are checked" : "" }, p.stale_anchors === null ? "–" : p.stale_anchors),
        el("td", { class: "n" }, p.rows), el("td", {}, when(p.last_write)));
      body.append(row);
    }
    if (!data.projects.length) body.append(el("tr", {}, el("td", { colspan: 7 }, `Nothing stored yet in ${data.store}.`)));
    const keep = data.projects.find((p) => p.project === state.project);
    const current = keep || data.projects.find((p) => p.current) || data.projects[0];
    if (current) chooseProject(current.project);
  } catch (e) { say(e.message, true); }
}

// ------------------------------------------------------------------ search with the as_of slider

function setSlider(value) {
  $("asof").value = value;
  const first = state.first, now = state.now || new Date();
  if (Number(value) >= 1000 || !first) {
    state.asof = null;
    $("asof-label").textContent = "now";
  } else {
    const t = new Date(first.getTime() + (now.getTime() - first.getTime()) * (Number(value) / 1000));
    state.asof = t.toISOString().replace(/\.\d+Z$/, "Z");
    $("asof-label").textContent = when(state.asof);
  }
}

async function search() {
  const q = $("q").value.trim();
  const paths = $("paths").value.split(",").map((s) => s.trim()).filter(Boolean);
  if (!q && !paths.length) return;
  say("searching…");
  try {
    const data = await api("/api/search", { q, path: paths, project: state.project, scope: $("scope").value, at: state.asof, limit: 10 });
    say("");
    $("search-message").textContent = (state.asof ? `as of ${when(state.asof)}: ` : "") + data.message;
    const list = $("results");
    list.replaceChildren(...data.results.map(resultItem));
    const fact = data.results.find((r) => r.kind === "fact");
    if (fact) drawTimeline($("search-timeline"), { id: fact.id, project: fact.project });
    else $("search-timeline").hidden = true;
  } catch (e) { say(e.message, true); }
}

function resultItem(r) {
  const prov = [`${r.source}`, `valid ${day(r.valid_at)} → ${r.invalid_at ? day(r.invalid_at) : "now"}`, `recorded ${when(r.created_at)}`];
  const client = (r.tags || []).find((t) => t.startsWith("client:"));  // a team server's client (server/team.py)
  if (client) prov.splice(1, 0, `by ${client.slice("client:".length)}`);
  if (r.commit) prov.push(`commit ${r.commit.slice(0, 7)}`);
  const anchors = Object.keys(r.anchors || {});
  if (anchors.length) prov.push(`anchored to ${anchors.join(", ")}`);
  else if (r.paths.length) prov.push(`about ${r.paths.join(", ")}`);
  if (r.score !== null) prov.push(`score ${r.score.toFixed(3)} via ${r.channels.join("+") || "-"}`);
  const li = el("li", { class: "result", "data-id": r.id, "data-kind": r.kind },
    el("div", {},
      el("span", { class: `badge ${r.kind}` }, r.kind),
      r.stale ? el("span", { class: "badge stale", title: `changed: ${r.stale.files.join(", ")}` }, "stale") : null,
      el("span", { class: "text" }, r.text)),
    el("div", { class: "meta" }, prov.join(" · ")),
    r.stale ? el("div", { class: "meta" }, `stale: ${r.stale.files.join(", ")} changed since ${r.stale.since_commit ? "commit " + r.stale.since_commit.slice(0, 7) : "it was remembered"}`) : null,
    r.note ? el("div", { class: "meta" }, "note: ", el("q", {}, r.note)) : null,
    el("div", { class: "meta" }, el("code", {}, r.id)),
    el("div", { class: "actions" },
      r.kind === "fact" ? el("button", { type: "button", class: "show-timeline", onclick: () => drawTimeline($("search-timeline"), { id: r.id, project: r.project }) }, "timeline") : null,
      el("button", { type: "button", class: "forget", onclick: () => prefill("forget", r.id) }, "forget…"),
      el("button", { type: "button", class: "replace", onclick: () => prefill("replace", r.id) }, "replace…")));
  return li;
}

function prefill(what, id) {
  $(`${what}-id`).value = id;
  show("correct");
  $(what === "forget" ? "forget-reason" : "replace-value").focus();
}

// ------------------------------------------------------------------ the timeline (SVG)

const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs = {}, text = null) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== null && v !== undefined) node.setAttribute(k, v);
  if (text !== null) node.textContent = text;
  return node;
}

async function drawTimeline(panel, params) {
  panel.hidden = false;
  panel.replaceChildren(el("p", {}, "loading…"));
  let data;
  try { data = await api("/api/timeline", params); }
  catch (e) { panel.replaceChildren(el("p", { class: "error" }, e.message)); return; }
  const bars = data.bars, now = new Date(data.now).getTime();
  const times = bars.flatMap((b) => [b.start, b.end, b.learned_at]).filter(Boolean).map((t) => new Date(t).getTime());
  let lo = Math.min(...times, now), hi = Math.max(...times, now);
  const pad = Math.max((hi - lo) * 0.04, 86400000);
  lo -= pad; hi += pad;
  const W = 960, left = 200, right = 60, lane = 46, top = 24, H = top + lane * bars.length + 30;
  const x = (t) => left + ((t - lo) / (hi - lo)) * (W - left - right);
  const g = svg("svg", { class: "timeline", width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: "img",
    "aria-label": `timeline of ${data.subject} ${data.predicate}` });
  g.append(svg("line", { class: "axis", x1: left, x2: W - right, y1: H - 24, y2: H - 24 }));
  for (let i = 0; i <= 5; i++) {
    const t = lo + ((hi - lo) * i) / 5;
    g.append(svg("line", { class: "axis", x1: x(t), x2: x(t), y1: H - 28, y2: H - 20 }));
    g.append(svg("text", { x: x(t), y: H - 6, "text-anchor": "middle" }, new Date(t).toISOString().slice(0, 10)));
  }
  bars.forEach((b, i) => {
    const y = top + i * lane;
    const s = new Date(b.start).getTime(), e = b.end ? new Date(b.end).getTime() : now;
    const label = b.value.length > 28 ? b.value.slice(0, 27) + "…" : b.value;
    g.append(svg("text", { x: 4, y: y + 18 }, label));
    const rect = svg("rect", { class: `bar ${b.status}`, x: x(s), y: y + 4, width: Math.max(2, x(e) - x(s)), height: 20,
      "data-id": b.id, "data-value": b.value, "data-status": b.status });
    rect.append(svg("title", {}, `${b.value}\n${b.status}: ${day(b.start)} → ${b.end ? day(b.end) : "now"}\nlearned ${when(b.learned_at)} (${b.source})${b.cause ? "\nended: " + b.cause : ""}`));
    rect.addEventListener("click", () => showNote(b, data));
    g.append(rect);
    const lx = x(new Date(b.learned_at).getTime());
    const mark = svg("polygon", { class: "learned", points: `${lx},${y + 6} ${lx + 6},${y + 14} ${lx},${y + 22} ${lx - 6},${y + 14}` });
    mark.append(svg("title", {}, `learned ${when(b.learned_at)}`));
    g.append(mark);
    if (b.end) {
      g.append(svg("line", { class: "end", x1: x(e), x2: x(e), y1: y + 1, y2: y + 27 }));
      const successor = bars.find((o) => o.id === b.ended_by);
      const cause = successor ? `replaced by “${successor.value}” (${successor.source})` : (b.cause || "ended");
      g.append(svg("text", { class: "cause", x: Math.min(x(e) + 4, W - 260), y: y + 40 }, cause.length > 60 ? cause.slice(0, 59) + "…" : cause));
    }
  });
  g.append(svg("line", { class: "now", x1: x(now), x2: x(now), y1: 8, y2: H - 24 }));
  g.append(svg("text", { x: x(now), y: 12, "text-anchor": "end" }, "now"));
  if (state.asof && panel.id === "search-timeline") {
    const t = new Date(state.asof).getTime();
    g.append(svg("line", { class: "asof", x1: x(t), x2: x(t), y1: 8, y2: H - 24 }));
  }
  panel.replaceChildren(
    el("h3", {}, `${data.subject} · ${data.predicate}`),
    el("p", { class: "message" }, data.message + " Bars: valid time; ◆ when chronomem learned it; red tick: ended. Click a bar for its note."),
    g);
}

function showNote(b, data) {
  $("note").hidden = false;
  $("note-title").textContent = `${data.subject} · ${data.predicate} = ${b.value}`;
  const meta = $("note-meta");
  meta.replaceChildren();
  const rows = [["id", b.id], ["status", b.status], ["valid", `${when(b.start)} → ${b.end ? when(b.end) : "now"}`],
    ["learned", when(b.learned_at)], ["stated by", b.source], ["commit", b.commit], ["ended by", b.ended_by],
    ["cause", b.cause], ["note id", b.note_id]];
  for (const [k, v] of rows) if (v) meta.append(el("dt", {}, k), el("dd", {}, v));
  $("note-text").textContent = b.note || "(no note recorded for this fact)";
}

// ------------------------------------------------------------------ brief and corrections

async function loadBrief() {
  try {
    const data = await api("/api/brief", { project: state.project, budget: $("budget").value });
    $("brief-tokens").textContent = `${data.tokens} tokens (budget ${data.budget_tokens}${data.omitted ? `, ${data.omitted} lines left out` : ""})`;
    $("brief-text").textContent = data.text;
  } catch (e) { say(e.message, true); }
}

async function correct(path, body) {
  const out = $("correct-message");
  try {
    const data = await api(path, {}, body);
    out.className = "message";
    out.textContent = data.message;
  } catch (e) {
    out.className = "message error";
    out.textContent = e.message;
  }
}

document.addEventListener("DOMContentLoaded", () => {
  for (const b of document.querySelectorAll("#tabs button")) b.addEventListener("click", () => show(b.dataset.tab));
  $("project").addEventListener("change", (e) => chooseProject(e.target.value));
  $("search-form").addEventListener("submit", (e) => { e.preventDefault(); search(); });
  let pending = null;
  $("asof").addEventListener("input", (e) => {
    setSlider(e.target.value);
    clearTimeout(pending);
    pending = setTimeout(search, 250);
  });
  $("asof-now").addEventListener("click", () => { setSlider(1000); search(); });
  $("timeline-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const q = $("tl-q").value.trim();
    const params = { project: state.project };
    if (/^[0-9A-HJKMNP-TV-Z]{26}$/i.test(q)) params.id = q;
    else if (q) params.q = q;
    else { params.subject = $("tl-subject").value.trim(); params.predicate = $("tl-predicate").value.trim(); }
    drawTimeline($("timeline-view"), params);
  });
  $("brief-form").addEventListener("submit", (e) => { e.preventDefault(); loadBrief(); });
  $("forget-form").addEventListener("submit", (e) => {
    e.preventDefault();
    correct("/api/forget", { id: $("forget-id").value.trim(), reason: $("forget-reason").value.trim(), retract: $("forget-retract").checked });
  });
  $("replace-form").addEventListener("submit", (e) => {
    e.preventDefault();
    correct("/api/replace", { id: $("replace-id").value.trim(), value: $("replace-value").value.trim(), text: $("replace-text").value.trim() });
  });
  $("note-close").addEventListener("click", () => { $("note").hidden = true; });
  loadProjects();
});
