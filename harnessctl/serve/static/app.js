// harnessctl serve: the fleet page and a session's page.  Everything a
// session says arrives as JSON and is put into the page as text
// (textContent), never as HTML: no agent text is ever parsed as markup.
"use strict";

const params = new URLSearchParams(location.search);
const token = params.get("token") || "";

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

function feed(path, extra) {
  const query = new URLSearchParams(extra || {});
  query.set("token", token);
  return new EventSource(path + "?" + query.toString());
}

function notice(text, bad) {
  const node = document.getElementById("notice");
  node.textContent = text;
  node.className = bad ? "bad" : "";
}

async function post(path, body) {
  const answer = await fetch(path, {
    method: "POST",
    headers: {"Content-Type": "application/json", "X-Harnessctl-Token": token},
    body: JSON.stringify(body),
  });
  let value = {};
  try { value = await answer.json(); } catch (e) { value = {error: answer.status + " " + answer.statusText}; }
  if (!answer.ok) throw new Error(value.error || answer.statusText);
  return value;
}

function ago(iso) {
  if (!iso) return "";
  const seconds = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  if (seconds < 60) return seconds + " s ago";
  if (seconds < 3600) return Math.floor(seconds / 60) + " min ago";
  if (seconds < 86400) return Math.floor(seconds / 3600) + " h ago";
  return Math.floor(seconds / 86400) + " d ago";
}

function spent(totals) {
  if (!totals) return "";
  const parts = [];
  if (totals.tokens) parts.push(totals.tokens.toLocaleString("en") + " tokens");
  if (totals.cost_usd !== null && totals.cost_usd !== undefined) parts.push("$" + totals.cost_usd.toFixed(4));
  return parts.join(", ");
}

// A worktree's branch and what the session changed in it: "harnessctl/a · 3 files +10 −2".
function worktree(tree) {
  if (!tree || typeof tree !== "object") return "";
  const changes = tree.changes;
  let counted = "";
  if (changes && changes.error) {
    counted = "changes unknown: " + changes.error;
  } else if (changes) {
    counted = changes.files + (changes.files === 1 ? " file" : " files") + " +" + changes.added +
      " \u2212" + changes.removed;
  }
  return [tree.branch, counted].filter(Boolean).join(" · ");
}

// -- the fleet ---------------------------------------------------------------------

function fleetPage() {
  const body = document.querySelector("#fleet tbody");
  const rows = new Map();

  function draw(row) {
    let tr = rows.get(row.file);
    if (!tr) {
      tr = el("tr", "session");
      tr.dataset.file = row.file;
      for (const name of ["name", "agent", "state", "activity", "spent", "last"]) tr.appendChild(el("td", name));
      rows.set(row.file, tr);
    }
    tr.dataset.index = row.index;
    const cells = tr.children;
    const link = el("a", "", row.name);
    link.href = "/session?" + new URLSearchParams({file: row.file, token: token}).toString();
    cells[0].replaceChildren(link);
    const tree = worktree(row.worktree);
    if (tree) cells[0].appendChild(el("div", "worktree", tree));
    cells[1].textContent = (row.agent || row.adapter || "") + (row.sandbox ? " (boxed)" : "");
    cells[2].textContent = row.error ? "error" : (row.state || "");
    if (row.state === "awaiting_reply" && row.requests) {
      cells[2].textContent = "awaiting reply (" + row.requests.length + ")";
    }
    cells[3].textContent = row.error || activity(row);
    cells[4].textContent = spent(row.totals);
    cells[5].textContent = ago(row.last_activity);
    cells[5].dataset.at = row.last_activity || "";
    tr.className = "session state-" + (row.error ? "error" : row.state);
    tr.classList.toggle("awaiting", row.state === "awaiting_reply");
    place(tr);
    summary();
  }

  function activity(row) {
    if (row.state === "awaiting_reply" && row.requests && row.requests.length) {
      const request = row.requests[0];
      return request.kind + ": " + (request.message || "");
    }
    return row.activity || "";
  }

  function place(tr) {
    const index = Number(tr.dataset.index);
    let before = null;
    for (const other of body.children) {
      if (other !== tr && Number(other.dataset.index) > index) { before = other; break; }
    }
    if (tr.parentNode !== body || tr.nextSibling !== before) body.insertBefore(tr, before);
  }

  function summary() {
    const all = rows.size;
    const waiting = body.querySelectorAll("tr.awaiting").length;
    const running = body.querySelectorAll("tr.state-running").length;
    const failed = body.querySelectorAll("tr.state-failed").length;
    const errors = body.querySelectorAll("tr.state-error").length;  // a row whose status could not be read
    document.getElementById("summary").textContent =
      all + " sessions, " + running + " running, " + waiting + " awaiting a reply, " + failed + " failed" +
      (errors ? ", " + errors + " unreadable" : "");
    document.getElementById("empty").hidden = all > 0;
    document.title = (waiting ? "(" + waiting + ") " : "") + "harnessctl fleet";
  }

  const source = feed("/events");
  source.addEventListener("row", (e) => draw(JSON.parse(e.data)));
  source.addEventListener("gone", (e) => {
    const file = JSON.parse(e.data).file;
    const tr = rows.get(file);
    if (tr) { tr.remove(); rows.delete(file); summary(); }
  });
  source.addEventListener("ready", () => { summary(); document.body.dataset.ready = "1"; });
  source.onopen = () => notice("", false);
  source.onerror = () => notice("connection lost: retrying", true);
  setInterval(() => {
    for (const cell of body.querySelectorAll("td.last")) cell.textContent = ago(cell.dataset.at);
  }, 10000);
}

// -- a session ----------------------------------------------------------------------

function sessionPage() {
  const file = params.get("file") || "";
  const transcript = document.getElementById("transcript");
  const entries = new Map();

  function line(pieces) {
    const node = el("div", "line");
    for (const [text, colours] of pieces) {
      const span = el("span", colours.split(" ").filter(Boolean).map((c) => "c-" + c).join(" "), text);
      node.appendChild(span);
    }
    return node;
  }

  function draw(entry) {
    const node = el("div", "entry kind-" + entry.kind);
    node.dataset.id = entry.id;
    const lines = entry.lines.map(line);
    if ((entry.kind === "tool" || entry.kind === "file") && lines.length > 1) {
      const fold = el("details");
      const head = el("summary");
      head.appendChild(lines[0]);
      fold.appendChild(head);
      const rest = el("pre");
      for (const one of lines.slice(1)) rest.appendChild(one);
      fold.appendChild(rest);
      node.appendChild(fold);
    } else {
      const pre = el("pre");
      for (const one of lines) pre.appendChild(one);
      node.appendChild(pre);
    }
    if (entry.request) node.appendChild(answers(entry.request));
    const old = entries.get(entry.id);
    const follow = window.innerHeight + window.scrollY >= document.body.scrollHeight - 40;
    if (old) old.replaceWith(node); else transcript.appendChild(node);
    entries.set(entry.id, node);
    if (follow) window.scrollTo(0, document.body.scrollHeight);
  }

  function answers(request) {
    const box = el("div", "answers");
    const fields = [];
    for (const question of request.questions) {
      const label = el("label", "question", question.label || question.id);
      let input;
      if (question.options.length) {
        input = el("select");
        for (const option of question.options) {
          const choice = el("option", "", option);
          choice.value = option;
          input.appendChild(choice);
        }
      } else {
        input = el("input");
        input.type = "text";
      }
      input.dataset.question = question.id;
      label.appendChild(input);
      box.appendChild(label);
      fields.push(input);
    }
    if (fields.length) {
      const submit = el("button", "answer fields", "Answer");
      submit.type = "button";
      submit.dataset.request = request.request_id;
      submit.addEventListener("click", () => {
        const answer = {};
        for (const input of fields) if (input.value !== "") answer[input.dataset.question] = input.value;
        reply(request.request_id, answer, submit);
      });
      box.appendChild(submit);
    }
    for (const option of request.options) {
      const button = el("button", "answer", option.label);
      button.type = "button";
      button.dataset.request = request.request_id;
      button.dataset.answer = option.answer;
      button.addEventListener("click", () => reply(request.request_id, option.answer, button));
      box.appendChild(button);
    }
    return box;
  }

  async function reply(requestId, answer, button) {
    button.disabled = true;
    try {
      await post("/reply", {file: file, request_id: requestId, answer: answer});
      notice("answered " + requestId, false);
    } catch (e) {
      notice(e.message, true);
      button.disabled = false;
    }
  }

  function status(row) {
    const state = document.getElementById("state");
    state.textContent = row.error ? "error: " + row.error : (row.state || "").replace("_", " ");
    state.className = "state-" + (row.error ? "error" : row.state);
    const facts = [row.agent || row.adapter, row.mode ? "mode " + row.mode : "", row.sandbox ? "boxed" : "",
                   spent(row.totals),
                   row.activity || "", ago(row.last_activity)];
    document.getElementById("facts").textContent = facts.filter(Boolean).join(" · ");
    document.getElementById("cancel").disabled = !(row.state === "running" || row.state === "awaiting_reply");
    changed(row);
  }

  // The worktree's patch, folded: asked when the fold opens, on Refresh, and
  // (at most once a second) while it is open and the session changes.
  const fold = document.querySelector("#worktree details");
  const patch = document.getElementById("patch");
  let later = null;
  let asked = 0;

  async function loadPatch() {
    later = null;
    const mine = ++asked;
    let text, bad;
    try {
      const answer = await fetch("/session/patch?" + new URLSearchParams({file: file, token: token}).toString());
      [text, bad] = [await answer.text(), !answer.ok];
    } catch (e) {
      [text, bad] = [e.message, true];
    }
    if (mine === asked) showPatch(text, bad);
  }

  function showPatch(text, bad) {
    patch.className = bad ? "bad" : "";
    if (bad || !text) {
      patch.textContent = bad ? text : "(no changes)";
      return;
    }
    const lines = document.createDocumentFragment();
    for (const one of text.replace(/\n$/, "").split("\n")) {
      const colour = one.startsWith("diff --git") || one.startsWith("+++ ") || one.startsWith("--- ") ? "c-bold" :
        one.startsWith("+") ? "c-green" : one.startsWith("-") ? "c-red" : one.startsWith("@@") ? "c-cyan" : "";
      lines.appendChild(el("span", colour, one + "\n"));
    }
    patch.replaceChildren(lines);
  }

  function changed(row) {
    const tree = row.worktree && typeof row.worktree === "object" ? row.worktree : null;
    document.getElementById("worktree").hidden = !tree;
    if (!tree) return;
    document.getElementById("changes").textContent = "worktree " + worktree(tree);
    if (fold.open && !later) later = setTimeout(loadPatch, 1000);
  }

  fold.addEventListener("toggle", () => { if (fold.open) loadPatch(); });
  document.getElementById("refresh").addEventListener("click", loadPatch);
  document.getElementById("send").addEventListener("click", async () => {
    const box = document.getElementById("text");
    if (!box.value.trim()) return;
    try {
      const answer = await post("/send", {file: file, text: box.value});
      box.value = "";
      notice("accepted: input " + answer.input_id, false);
    } catch (e) {
      notice(e.message, true);
    }
  });
  document.getElementById("cancel").addEventListener("click", async () => {
    try {
      await post("/cancel", {file: file});
      notice("cancelled", false);
    } catch (e) {
      notice(e.message, true);
    }
  });

  const source = feed("/session/events", {file: file});
  source.addEventListener("entry", (e) => draw(JSON.parse(e.data)));
  source.addEventListener("status", (e) => status(JSON.parse(e.data)));
  source.addEventListener("reset", () => { transcript.replaceChildren(); entries.clear(); });
  source.addEventListener("gone", () => notice("the event file is gone", true));
  source.addEventListener("ready", () => { document.body.dataset.ready = "1"; });
  source.onopen = () => { transcript.replaceChildren(); entries.clear(); notice("", false); };
  source.onerror = () => notice("connection lost: retrying", true);
}

if (document.body.dataset.page === "fleet") fleetPage(); else sessionPage();
