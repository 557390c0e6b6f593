// The dashboard page: it fetches /api/state and renders it, and follows
// /api/events, refetching the state (debounced) when something changes.
// Everything is built with DOM calls and textContent, never from HTML
// strings, so no name in the cluster can inject markup.
"use strict";

const maxEvents = 200;
let source = null;
let refetchTimer = null;

function $(id) { return document.getElementById(id); }

function show(which) {
  for (const id of ["login", "notice", "board"]) $(id).hidden = id !== which;
  $("logout").hidden = which !== "board";
}

function cell(text, cls) {
  const td = document.createElement("td");
  td.textContent = text === undefined || text === null ? "" : String(text);
  if (cls) td.className = cls;
  return td;
}

function fill(tableID, rows, columns, emptyText) {
  const body = $(tableID).tBodies[0];
  body.replaceChildren();
  if (rows.length === 0) {
    const tr = body.insertRow();
    const td = cell(emptyText, "empty");
    td.colSpan = columns;
    tr.append(td);
    return;
  }
  for (const cells of rows) {
    const tr = body.insertRow();
    tr.append(...cells);
  }
}

function stateClass(word) {
  if (["ready", "running", "active", "completed", "drained"].includes(word)) return "ok";
  if (["down", "failed", "rejected", "unreachable", "timed_out", "rollback_paused", "paused"].includes(word)) return "bad";
  return "warn";
}

function renderState(st) {
  $("cluster").textContent = "cluster " + st.cluster_id.slice(0, 12) + " · served by " + (st.served_by || "?");
  const r = st.raft;
  const health = $("health");
  if (r.quorum_lost) {
    health.textContent = "quorum lost"; health.className = "pill bad";
  } else if (!r.leader_known) {
    health.textContent = "no leader"; health.className = "pill bad";
  } else {
    health.textContent = "leader " + (r.leader || "?"); health.className = "pill ok";
  }
  fill("raft", [
    [cell("Leader"), cell(r.leader_known ? r.leader : "none known", r.leader_known ? "ok" : "bad")],
    [cell("Term"), cell(r.term)],
    [cell("Members"), cell(r.members + " (" + r.voters + " voters)")],
    [cell("Commit / applied"), cell(r.commit + " / " + r.applied)],
  ], 2, "");

  fill("nodes", st.nodes.map((n) => {
    let mgr = "";
    if (n.manager) {
      mgr = (n.manager.leader ? "leader, " : "") + n.manager.suffrage + ", " + n.manager.reachability;
    }
    const status = n.status + (n.drain ? " (drain " + n.drain + ")" : "");
    return [cell(n.hostname), cell(n.role), cell(n.availability, stateClass(n.availability)),
      cell(status, stateClass(n.status)), cell(mgr), cell(n.address, "muted")];
  }), 6, "no nodes");

  fill("services", st.services.map((s) => {
    const perNode = s.nodes.map((p) =>
      (p.node || "unplaced") + ": " + p.states.map((c) => c.count + " " + c.state).join(", ")).join("; ");
    const running = s.running + " / " + s.wanted;
    return [cell(s.name), cell(s.mode), cell(running, s.running >= s.wanted ? "ok" : "warn"),
      cell(perNode), cell(s.update ? s.update : "", s.update ? stateClass(s.update) : "")];
  }), 5, "no services");

  fill("pending", st.pending.map((p) => [cell(p.replica), cell(p.reason || "not looked at yet", "warn"), cell(p.message)]),
    3, "no pending replicas");
  fill("updates", st.updates.map((u) => [cell(u.service), cell(u.state, stateClass(u.state)), cell(u.message)]),
    3, "no updates in progress");
}

async function refetch() {
  let resp;
  try {
    resp = await fetch("/api/state", { credentials: "same-origin" });
  } catch (e) {
    $("health").textContent = "daemon unreachable"; $("health").className = "pill bad";
    return;
  }
  if (resp.status === 401) { stopEvents(); show("login"); return; }
  const body = await resp.json();
  if (!resp.ok) {
    stopEvents();
    $("notice-text").textContent = body.reason + ": " + body.message;
    show("notice");
    return;
  }
  renderState(body);
  show("board");
  startEvents();
}

function scheduleRefetch() {
  if (refetchTimer) return;
  refetchTimer = setTimeout(() => { refetchTimer = null; refetch(); }, 300);
}

function eventRow(e) {
  let change = "";
  if (e.from || e.to) change = (e.from || "") + " → " + (e.to || "");
  const when = new Date(e.time).toLocaleTimeString();
  return [cell(when, "muted"), cell(e.type), cell(e.action), cell(e.name), cell(change, e.to ? stateClass(e.to) : ""),
    cell((e.reason ? e.reason + ": " : "") + (e.message || ""))];
}

function prependEvents(batch) {
  const body = $("events").tBodies[0];
  const placeholder = body.querySelector("td.empty");
  if (placeholder) placeholder.parentElement.remove();
  for (const e of batch) {
    const tr = document.createElement("tr");
    tr.append(...eventRow(e));
    body.prepend(tr);
  }
  while (body.rows.length > maxEvents) body.deleteRow(-1);
}

function startEvents() {
  if (source) return;
  source = new EventSource("/api/events");
  source.addEventListener("hello", () => {
    fill("events", [], 6, "no events yet");
    $("live").textContent = "· live";
    scheduleRefetch();
  });
  source.addEventListener("events", (m) => { prependEvents(JSON.parse(m.data)); scheduleRefetch(); });
  source.addEventListener("gap", (m) => {
    const g = JSON.parse(m.data);
    prependEvents([{ time: new Date().toISOString(), type: "gap", action: "", name: "", message: g.message }]);
    scheduleRefetch();
  });
  source.onerror = () => {
    // The browser reconnects by itself after a stream that ended, but
    // gives up on one refused (signed out, no manager): the refetch then
    // says why, and opens a new one once there is something to follow.
    if (source.readyState === EventSource.CLOSED) source = null;
    $("live").textContent = "· reconnecting";
    scheduleRefetch();
  };
}

function stopEvents() {
  if (source) { source.close(); source = null; }
  $("live").textContent = "";
}

async function login(ev) {
  ev.preventDefault();
  const form = new URLSearchParams(new FormData($("login-form")));
  const resp = await fetch("/login", { method: "POST", body: form, credentials: "same-origin" });
  if (!resp.ok) {
    const body = await resp.json();
    $("login-error").textContent = body.reason + ": " + body.message;
    return;
  }
  $("token").value = "";
  $("login-error").textContent = "";
  refetch();
}

async function logout() {
  await fetch("/logout", { method: "POST", credentials: "same-origin" });
  stopEvents();
  show("login");
}

document.addEventListener("DOMContentLoaded", () => {
  $("login-form").addEventListener("submit", login);
  $("logout").addEventListener("click", logout);
  refetch();
});
