// chronomem's local page: calls the JSON API of chronomem/server/ui.py. Plain script, no build step.
// Every value from the store is put in the page as text (textContent), never as HTML.
"use strict";

const CSRF = document.querySelector('meta[name="csrf-token"]').content;
const $ = (id) => document.getElementById(id);
const state = { project: "", now: null, asof: null, projects: [], moments: [], recentOffset: 0, person: "" };
//: Memories per page of the landing list.
const PAGE = 20;

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

async function chooseProject(key) {
  state.project = key;
  $("project").value = key;
  $("export-link").href = `/api/export?project=${encodeURIComponent(key)}`;
  $("export-link").setAttribute("download", `${key}.jsonl`);
  await loadMoments();
  await refresh();
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
        el("td", { "data-label": "project" }, p.project), el("td", { class: "n", "data-label": "memories" }, p.memories),
        el("td", { class: "n", "data-label": "current facts" }, p.current_facts),
        el("td", { class: "n", "data-label": "superseded" }, p.superseded),
        el("td", { class: "n", "data-label": "stale anchors", title: p.stale_anchors === null ? "only the current project's files are checked" : "" }, p.stale_anchors === null ? "–" : p.stale_anchors),
        el("td", { class: "n", "data-label": "rows" }, p.rows), el("td", { "data-label": "last write" }, when(p.last_write)));
      body.append(row);
    }
    if (!data.projects.length) body.append(el("tr", {}, el("td", { colspan: 7 }, `Nothing stored yet in ${data.store}.`)));
    const keep = data.projects.find((p) => p.project === state.project);
    const current = keep || data.projects.find((p) => p.current) || data.projects[0];
    if (current) await chooseProject(current.project);
    else { $("recent-title").textContent = "Nothing stored yet"; $("recent-count").textContent = `The store ${data.store} holds no memories.`; }
  } catch (e) { say(e.message, true); }
}

// ------------------------------------------------------------------ the as_of slider and date box
// The slider stops at the moments the project's memories began or ended (/api/moments), oldest first, and
// its last stop is now: a store spanning years that changed on a few days moves a day per step. The date
// box beside it takes any day (what held at the end of that day); the slider then rests on the last
// moment at or before it.

async function loadMoments() {
  try {
    const data = await api("/api/moments", { project: state.project });
    state.moments = data.moments;
    state.now = new Date(data.now);
  } catch (e) { state.moments = []; say(e.message, true); }
  const slider = $("asof");
  slider.min = 0;
  slider.max = state.moments.length;
  slider.disabled = !state.moments.length;
  setSlider(state.moments.length);
}

function setSlider(value) {
  const i = Math.max(0, Math.min(Number(value), state.moments.length));
  $("asof").value = i;
  if (i >= state.moments.length) {
    state.asof = null;
    $("asof-label").textContent = "now";
    $("asof-date").value = "";
  } else {
    state.asof = state.moments[i];
    $("asof-label").textContent = when(state.asof);
    $("asof-date").value = day(state.asof);
  }
}

function setDate(value) {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value || "")) { setSlider(state.moments.length); return; }
  const t = `${value}T23:59:59Z`;
  if (state.now && new Date(t) >= state.now) { setSlider(state.moments.length); return; }
  let i = 0;
  state.moments.forEach((m, k) => { if (m <= t) i = k; });
  $("asof").value = i;
  state.asof = t;
  $("asof-label").textContent = `${value} (end of day)`;
}

/** What the page shows for the query box and the moment: the search results, or the landing list. */
function refresh() {
  const q = $("q").value.trim(), paths = $("paths").value.trim();
  return q || paths ? search() : loadRecent(0);
}

// ------------------------------------------------------------------ the landing list: recent memories

async function loadRecent(offset) {
  try {
    const data = await api("/api/recent", { project: state.project, at: state.asof, offset, limit: PAGE });
    state.recentOffset = data.offset;
    const shown = data.results.length;
    $("recent-title").textContent = (state.asof ? `Valid as of ${$("asof-label").textContent}` : "Recent memories") + ` in ${data.project}`;
    $("recent-count").textContent = data.total
      ? `${data.offset + 1}–${data.offset + shown} of ${data.total}, most recently recorded first. Click one for its timeline; search above for the rest.`
      : (state.asof ? "Nothing held at that moment." : "Nothing stored in this project yet.");
    $("recent").replaceChildren(...data.results.map((r) => resultItem(r)));
    $("recent-newer").disabled = data.offset === 0;
    $("recent-older").disabled = data.offset + shown >= data.total;
    $("landing").hidden = false;
    $("results").replaceChildren();
    $("search-message").textContent = "";
    $("search-timeline").hidden = true;
  } catch (e) { say(e.message, true); }
}

// ------------------------------------------------------------------ search

async function search() {
  const q = $("q").value.trim();
  const paths = $("paths").value.split(",").map((s) => s.trim()).filter(Boolean);
  if (!q && !paths.length) return loadRecent(0);
  say("searching…");
  try {
    const data = await api("/api/search", { q, path: paths, project: state.project, scope: $("scope").value, at: state.asof, limit: 10 });
    say("");
    $("landing").hidden = true;
    $("search-message").textContent = (state.asof ? `as of ${$("asof-label").textContent}: ` : "") + data.message;
    const items = data.results.map((r) => resultItem(r));
    $("results").replaceChildren(...items);
    if (items.length) choose(data.results[0], items[0]);  // the timeline follows the chosen result: the first, until another is clicked
    else $("search-timeline").hidden = true;
  } catch (e) { say(e.message, true); }
}

/** Choose a result (or a landing item): it is marked, and the timeline panel shows its fact's slot (a note has none). */
function choose(r, li) {
  for (const other of document.querySelectorAll("#results .result, #recent .result")) {
    other.classList.remove("chosen");
    other.removeAttribute("aria-current");
  }
  li.classList.add("chosen");
  li.setAttribute("aria-current", "true");
  const panel = $("search-timeline");
  panel.dataset.for = r.id;
  if (r.kind === "fact") drawTimeline(panel, { id: r.id, project: r.project });
  else panel.hidden = true;
}

function author(r) {
  // who wrote it: a team server's client or the person on the page (their `client:` tag), else the source
  const by = r.by || ((r.tags || []).find((t) => t.startsWith("client:")) || "").slice("client:".length);
  if (!by) return r.source;
  return (r.tags || []).includes("ui") ? `by ${by} on the page` : `by ${by}`;
}

function endedLine(r) {
  const e = r.ended;
  const soon = state.now && new Date(e.at) > state.now;
  if (e.how === "replaced") return `${soon ? "replaced from" : "replaced on"} ${day(e.at)} by ${e.by}`;
  return `${soon ? "ends on" : "forgotten on"} ${day(e.at)}${e.reason ? ": " + e.reason : ""}`;
}

function resultItem(r) {
  const prov = [author(r), `valid ${day(r.valid_at)} → ${r.invalid_at ? day(r.invalid_at) : "now"}`, `recorded ${when(r.created_at)}`];
  if (r.commit) prov.push(`commit ${r.commit.slice(0, 7)}`);
  const anchors = Object.keys(r.anchors || {});
  if (anchors.length) prov.push(`anchored to ${anchors.join(", ")}`);
  else if (r.paths.length) prov.push(`about ${r.paths.join(", ")}`);
  if (r.score !== null) prov.push(`score ${r.score.toFixed(3)} via ${r.channels.join("+") || "-"}`);
  const li = el("li", { class: "result", "data-id": r.id, "data-kind": r.kind, tabindex: "0" },
    el("div", {},
      el("span", { class: `badge ${r.kind}` }, r.kind),
      r.stale ? el("span", { class: "badge stale", title: `changed: ${r.stale.files.join(", ")}` }, "stale") : null,
      r.ended ? el("span", { class: `badge ended ${r.ended.how}`, title: endedLine(r) }, r.ended.how) : null,
      el("span", { class: "text" }, r.text)),
    el("div", { class: "meta prov" }, prov.join(" · ")),
    r.ended ? el("div", { class: "meta ended-line" }, endedLine(r)) : null,
    r.supersedes ? el("div", { class: "meta" }, "replaces ", el("code", { class: "supersedes" }, r.supersedes)) : null,
    r.stale ? el("div", { class: "meta" }, `stale: ${r.stale.files.join(", ")} changed since ${r.stale.since_commit ? "commit " + r.stale.since_commit.slice(0, 7) : "it was remembered"}`) : null,
    r.note ? el("div", { class: "meta" }, "note: ", el("q", {}, r.note)) : null,
    el("div", { class: "meta" }, el("code", {}, r.id)),
    el("div", { class: "actions" },
      r.kind === "fact" ? el("button", { type: "button", class: "show-timeline" }, "timeline") : null,
      el("button", { type: "button", class: "forget", onclick: (e) => { e.stopPropagation(); prefill("forget", r.id); } }, "forget…"),
      el("button", { type: "button", class: "replace", onclick: (e) => { e.stopPropagation(); prefill("replace", r.id); } }, "replace…")));
  li.addEventListener("click", () => choose(r, li));
  li.addEventListener("keydown", (e) => { if (e.key === "Enter" && e.target === li) choose(r, li); });
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
  const asked = JSON.stringify(params);
  panel.dataset.asked = asked;
  panel.hidden = false;
  panel.replaceChildren(el("p", {}, "loading…"));
  let data;
  try { data = await api("/api/timeline", params); }
  catch (e) { if (panel.dataset.asked === asked) panel.replaceChildren(el("p", { class: "error" }, e.message)); return; }
  if (panel.dataset.asked !== asked) return;  // another result was chosen meanwhile: its timeline wins
  const bars = data.bars, now = new Date(data.now).getTime();
  const times = bars.flatMap((b) => [b.start, b.end, b.learned_at]).filter(Boolean).map((t) => new Date(t).getTime());
  let lo = Math.min(...times, now), hi = Math.max(...times, now);
  const pad = Math.max((hi - lo) * 0.04, 86400000);
  lo -= pad; hi += pad;
  // as wide as the panel: narrow screens put each value's name above its bar instead of beside it
  const W = Math.max(300, Math.min(960, (panel.clientWidth || 960) - 24));
  const narrow = W < 640;
  const left = narrow ? 8 : 200, right = narrow ? 12 : 60, lane = narrow ? 62 : 46, top = 24, H = top + lane * bars.length + 30;
  const barY = narrow ? 16 : 4;
  const x = (t) => left + ((t - lo) / (hi - lo)) * (W - left - right);
  const g = svg("svg", { class: "timeline", width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: "img",
    "aria-label": `timeline of ${data.subject} ${data.predicate}` });
  g.append(svg("line", { class: "axis", x1: left, x2: W - right, y1: H - 24, y2: H - 24 }));
  const ticks = narrow ? 2 : 5;
  for (let i = 0; i <= ticks; i++) {
    const t = lo + ((hi - lo) * i) / ticks;
    const anchor = i === 0 ? "start" : i === ticks ? "end" : "middle";
    g.append(svg("line", { class: "axis", x1: x(t), x2: x(t), y1: H - 28, y2: H - 20 }));
    g.append(svg("text", { x: x(t), y: H - 6, "text-anchor": anchor }, new Date(t).toISOString().slice(0, 10)));
  }
  const chars = (room) => Math.max(8, Math.floor(room / 6.6));  // 12px text: about 6.6px a character
  const cut = (text, n) => (text.length > n ? text.slice(0, n - 1) + "…" : text);
  bars.forEach((b, i) => {
    const y = top + i * lane;
    const s = new Date(b.start).getTime(), e = b.end ? new Date(b.end).getTime() : now;
    const who = b.by || b.source;
    g.append(svg("text", { class: "value", x: narrow ? left : 4, y: narrow ? y + 10 : y + 18 },
      narrow ? cut(`${b.value} · ${who}`, chars(W - left - right)) : cut(b.value, 28)));
    const rect = svg("rect", { class: `bar ${b.status}`, x: x(s), y: y + barY, width: Math.max(2, x(e) - x(s)), height: 20,
      "data-id": b.id, "data-value": b.value, "data-status": b.status, "data-by": who });
    rect.append(svg("title", {}, `${b.value}\n${b.status}: ${day(b.start)} → ${b.end ? day(b.end) : "now"}\nlearned ${when(b.learned_at)} (${who})${b.cause ? "\nended: " + b.cause : ""}\nid ${b.id}`));
    rect.addEventListener("click", () => showNote(b, data));
    g.append(rect);
    const lx = x(new Date(b.learned_at).getTime());
    const my = y + barY + 10;
    const mark = svg("polygon", { class: "learned", points: `${lx},${my - 8} ${lx + 6},${my} ${lx},${my + 8} ${lx - 6},${my}` });
    mark.append(svg("title", {}, `learned ${when(b.learned_at)}`));
    g.append(mark);
    if (b.end) {
      g.append(svg("line", { class: "end", x1: x(e), x2: x(e), y1: y + barY - 3, y2: y + barY + 23 }));
      const successor = bars.find((o) => o.id === b.ended_by);
      const cause = successor ? `replaced by “${successor.value}” (${successor.by || successor.source})` : (b.cause || "ended");
      const cx = narrow ? left : Math.min(x(e) + 4, W - 260);
      g.append(svg("text", { class: "cause", x: cx, y: y + barY + 36 }, cut(cause, Math.min(60, chars(W - cx - 4)))));
    }
  });
  g.append(svg("line", { class: "now", x1: x(now), x2: x(now), y1: 8, y2: H - 24 }));
  g.append(svg("text", { x: x(now), y: 12, "text-anchor": "end" }, "now"));
  if (state.asof && panel.id === "search-timeline") {
    const t = new Date(state.asof).getTime();
    g.append(svg("line", { class: "asof", x1: x(t), x2: x(t), y1: 8, y2: H - 24 }));
  }
  panel.replaceChildren(
    el("h3", { "data-subject": data.subject, "data-predicate": data.predicate }, `${data.subject} · ${data.predicate}`),
    el("p", { class: "message" }, data.message + " Bars: valid time; ◆ when chronomem learned it; red tick: ended. Click a bar for its note."),
    g);
}

function showNote(b, data) {
  $("note").hidden = false;
  $("note-title").textContent = `${data.subject} · ${data.predicate} = ${b.value}`;
  const meta = $("note-meta");
  meta.replaceChildren();
  const rows = [["id", b.id], ["status", b.status], ["valid", `${when(b.start)} → ${b.end ? when(b.end) : "now"}`],
    ["learned", when(b.learned_at)], ["stated by", b.by ? `${b.by} (${b.source})` : b.source], ["commit", b.commit], ["ended by", b.ended_by],
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
    loadMoments();  // a correction adds a moment
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
    pending = setTimeout(refresh, 250);
  });
  $("asof-date").addEventListener("change", (e) => { setDate(e.target.value); refresh(); });
  $("asof-now").addEventListener("click", () => { setSlider(state.moments.length); refresh(); });
  $("recent-newer").addEventListener("click", () => loadRecent(Math.max(0, state.recentOffset - PAGE)));
  $("recent-older").addEventListener("click", () => loadRecent(state.recentOffset + PAGE));
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
