// BobNet console. Every piece of text from the server (model output
// included) is inserted with textContent, never as HTML.
(function () {
  "use strict";
  const $ = (id) => document.getElementById(id);
  const log = $("log");
  const previews = new Map(); // proposal id -> element
  let source = null;

  const fromPath = location.pathname.match(/^\/c\/([a-z0-9][a-z0-9_-]{0,63})$/);
  $("channel").value = fromPath ? fromPath[1] : (localStorage.getItem("bobnet.channel") || "general");
  $("user").value = localStorage.getItem("bobnet.user") || "";

  function token() { return localStorage.getItem("bobnet.token") || ""; }
  function headers() {
    const h = { "Content-Type": "application/json" };
    if (token()) h.Authorization = "Bearer " + token();
    return h;
  }
  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function safeURL(u) {
    try {
      const url = new URL(u, location.href);
      return url.protocol === "http:" || url.protocol === "https:" ? url.href : null;
    } catch (e) { return null; }
  }
  function scroll() { log.scrollTop = log.scrollHeight; }
  function user() {
    const u = $("user").value.trim();
    if (!u) { $("user").focus(); alertMsg("Enter your name in “You are” first."); return null; }
    localStorage.setItem("bobnet.user", u);
    return u;
  }
  function alertMsg(text) { const m = el("div", "msg error", text); log.appendChild(m); scroll(); }

  async function api(method, path, body) {
    const res = await fetch(path, { method, headers: headers(), body: body ? JSON.stringify(body) : undefined });
    if (res.status === 401) {
      const t = prompt("This BobNet needs its API token (BOBNET_API_TOKEN):");
      if (t) { localStorage.setItem("bobnet.token", t); connect(); return api(method, path, body); }
    }
    let data = {};
    try { data = await res.json(); } catch (e) { /* empty */ }
    return { status: res.status, data };
  }

  function clearWorking(requestID) {
    for (const w of log.querySelectorAll(".msg.working")) {
      if (!requestID || w.dataset.request === requestID) w.remove();
    }
  }

  function renderMessage(d) {
    const m = el("div", "msg user");
    m.dataset.testid = d.revises ? "feedback-message" : "message";
    m.appendChild(el("div", "who", d.revises ? d.user + " · feedback on the proposal" : d.user));
    m.appendChild(document.createTextNode(d.text));
    log.appendChild(m);
  }

  // Drafts of plans being written and runs' progress (showing.js).
  const showing = window.BobNetShowing({ el, log, labelled, safeURL, clearWorking });

  // The home list of channels and boards (home.js).
  const home = window.BobNetHome({ $, el, api, safeURL, connect });

  // Accept / Send back on run cards under review (reviews.js).
  const reviewing = window.BobNetReviews({ el, button, user, api, alertMsg });

  function renderReply(d) {
    clearWorking();
    showing.answered(d.request);
    const m = el("div", "msg" + (d.kind === "error" || d.kind === "slow_down" ? " error" : ""));
    m.dataset.testid = "reply";
    m.dataset.kind = d.kind;
    m.appendChild(el("div", "who", "BobNet"));
    m.appendChild(document.createTextNode(d.text || ""));
    if (d.questions && d.questions.length) {
      const ul = el("ul");
      d.questions.forEach((q) => ul.appendChild(el("li", "", q)));
      m.appendChild(ul);
    }
    const href = d.board_url && safeURL(d.board_url);
    if (href) {
      m.appendChild(document.createElement("br"));
      const a = el("a", "board-link", d.review ? "Open the run page" : "Open the board");
      a.href = href;
      a.dataset.testid = "board-link";
      m.appendChild(a);
    }
    if (d.review) reviewing.reply(m, d.review);
    log.appendChild(m);
  }

  function cardTitles(plan) {
    const t = {};
    (plan.actions || []).forEach((a) => (a.cards || []).forEach((c) => { t[c.temp_id] = c.title; }));
    return t;
  }

  const modeHelp = "Workspace mode says where a card's work happens: Direct in the project itself, Scratch in a throwaway folder, Worktree in a separate git worktree and branch.";

  function labelled(label, value, cls) {
    const t = el("span", "tag" + (cls ? " " + cls : ""));
    t.appendChild(el("span", "label", label + ": "));
    t.appendChild(document.createTextNode(value));
    return t;
  }

  function list(cls, title, items, testid) {
    const box = el("div", cls);
    if (testid) box.dataset.testid = testid;
    box.appendChild(el("div", "list-title", title));
    const ul = el("ul");
    items.forEach((x) => ul.appendChild(el("li", "", x)));
    box.appendChild(ul);
    return box;
  }

  function isChange(a) { return a.type === "update_card" || a.type === "add_links"; }
  function createsBoard(plan) { return ((plan || {}).actions || []).some((a) => !!a.board); }

  function renderPreview(p) {
    clearWorking();
    showing.answered(p.request_id);
    const m = el("div", "msg preview");
    m.dataset.testid = "preview";
    m.dataset.proposal = p.id;
    m.appendChild(el("div", "who", "BobNet · proposal v" + p.version + " for " + p.requested_by));
    const plan = p.plan || {};
    if (plan.answer) m.appendChild(el("p", "", plan.answer));
    // What changed since the last version goes beside the buttons, where
    // the decision is made.
    let changesBox = null;
    if (p.changes) {
      const items = BobNetText.changeItems(p.changes);
      if (items.length) {
        changesBox = list("changes", "What changed since v" + (p.version - 1) + ":", items);
      } else {
        changesBox = el("div", "changes none", "No changes since v" + (p.version - 1) + " — try rephrasing your feedback.");
      }
      changesBox.dataset.testid = "changes";
    }
    const boardChanges = (p.board_changes || []).map(BobNetText.boardChangeText);
    if (!boardChanges.length) {
      (plan.actions || []).filter(isChange).forEach((a) => {
        if (a.type === "update_card") {
          ["status", "assignee", "title", "body"].forEach((f) => { if (a[f] !== undefined && a[f] !== null) boardChanges.push(a.card + ": " + f + " → " + a[f]); });
        } else {
          (a.links || []).forEach((l) => boardChanges.push(l.card + " will wait on " + l.depends_on));
        }
      });
    }
    if (boardChanges.length) m.appendChild(list("changes board-changes", "Changes to the board (now → after approval):", boardChanges, "board-changes"));
    const titles = cardTitles(plan);
    const warnings = {};
    (p.warnings || []).forEach((w) => { warnings[w.path] = w.message; });
    let anyCards = false;
    (plan.actions || []).forEach((a, ai) => {
      if (isChange(a) || a.type === "schedule_board") return;
      anyCards = true;
      m.appendChild(el("h3", "board-name", a.board ? a.board.name : "New cards for this channel's board"));
      if (a.board && a.board.goal) m.appendChild(el("p", "goal", a.board.goal));
      const deps = {};
      (a.links || []).forEach((l) => { (deps[l.card] = deps[l.card] || []).push(titles[l.depends_on] || l.depends_on); });
      m.appendChild(el("div", "meta", (a.cards || []).length + " cards · " + (a.links || []).length + " dependencies"));
      const grid = el("div", "cards");
      (a.cards || []).forEach((c, ci) => {
        const card = el("div", "card");
        card.dataset.testid = "preview-card";
        card.appendChild(el("h4", "", c.title));
        const tags = el("div", "tags");
        const warn = warnings["actions[" + ai + "].cards[" + ci + "].assignee"];
        if (!c.assignee) tags.appendChild(labelled("Assignee", "Unassigned", "warn"));
        else if (warn) tags.appendChild(labelled("Assignee", c.assignee + " (unknown profile)", "warn"));
        else tags.appendChild(labelled("Assignee", c.assignee));
        tags.appendChild(labelled("Status", c.status));
        tags.appendChild(labelled("Workspace", c.workspace_mode || "Direct"));
        card.appendChild(tags);
        if (c.body) { const b = el("div", "body", c.body); b.dataset.testid = "card-body"; card.appendChild(b); }
        if (c.acceptance_criteria && c.acceptance_criteria.length) {
          card.appendChild(el("div", "deps", "Acceptance criteria:"));
          const ul = el("ul");
          c.acceptance_criteria.forEach((x) => ul.appendChild(el("li", "", x)));
          card.appendChild(ul);
        }
        if (deps[c.temp_id]) card.appendChild(el("div", "deps", "Depends on: " + deps[c.temp_id].join(", ")));
        grid.appendChild(card);
      });
      m.appendChild(grid);
    });
    if (anyCards) { const h = el("p", "mode-help", modeHelp); h.dataset.testid = "mode-help"; m.appendChild(h); }
    (plan.actions || []).filter((a) => a.type === "schedule_board").forEach((a) => {
      const n = el("div", "notes", "⏰ Once approved, the board runs by itself on " + a.cron + " (" + a.timezone + "): each run resets its cards and its runners work them again.");
      n.dataset.testid = "schedule";
      m.appendChild(n);
    });
    if (plan.assumptions && plan.assumptions.length) {
      const n = el("div", "notes", "Assumptions:");
      const ul = el("ul");
      plan.assumptions.forEach((x) => ul.appendChild(el("li", "", x)));
      n.appendChild(ul);
      m.appendChild(n);
    }
    const otherWarnings = (p.warnings || []).filter((w) => !/\.assignee$/.test(w.path));
    if (otherWarnings.length) {
      const n = el("div", "notes warnings", "Warnings:");
      const ul = el("ul");
      otherWarnings.forEach((w) => ul.appendChild(el("li", "", w.path + ": " + w.message)));
      n.appendChild(ul);
      m.appendChild(n);
    }
    if (changesBox) m.appendChild(changesBox);
    const actions = el("div", "actions");
    actions.appendChild(el("span", "state"));
    m.appendChild(actions);
    log.appendChild(m);
    previews.set(p.id, m);
    updatePreview(p);
  }

  function button(label, cls, testid, onClick) {
    const b = el("button", cls, label);
    b.type = "button";
    b.dataset.testid = testid;
    b.addEventListener("click", onClick);
    return b;
  }

  function updatePreview(p) {
    const m = previews.get(p.id);
    if (!m) return;
    const actions = m.querySelector(".actions");
    actions.replaceChildren();
    const state = el("span", "state " + p.state);
    state.dataset.testid = "proposal-state";
    actions.appendChild(state);
    if (p.state === "pending") {
      state.textContent = "Waiting for approval · expires " + new Date(p.expires_at).toLocaleString();
      actions.prepend(
        button(createsBoard(p.plan) ? "Approve and create" : "Approve and apply", "primary", "approve", () => decide(p.id, "approve")),
        button("Revise", "", "revise", () => showRevise(p.id, actions)),
        button("Cancel", "danger", "cancel", () => showCancel(p.id, actions)));
      const q = BobNetText.quorumText(p.quorum);
      if (q) {
        const line = el("span", "quorum", q);
        line.dataset.testid = "quorum";
        actions.appendChild(line);
      }
      if (p.quorum && p.quorum.needed > 1 && (p.quorum.approvals || []).length) {
        actions.appendChild(button("Withdraw my approval", "", "withdraw", () => decide(p.id, "withdraw")));
      }
    } else if (p.state === "approved") {
      state.textContent = "Approved by " + p.decided_by + " ";
      const href = p.board_url && safeURL(p.board_url);
      if (href) { const a = el("a", "", "Open board"); a.href = href; state.appendChild(a); }
    } else if (p.state === "expired") {
      state.textContent = "Expired ";
      actions.appendChild(button("Propose again", "", "propose-again", () => decide(p.id, "propose-again")));
    } else {
      state.textContent = p.state.charAt(0).toUpperCase() + p.state.slice(1) + (p.decided_by ? " by " + p.decided_by : "") + (p.reason ? ": " + p.reason : "");
    }
    if (p.state === "superseded") {
      m.classList.add("superseded");
      const toggle = button(m.classList.contains("expanded") ? "Hide this version" : "Show this version", "", "show-version", () => {
        m.classList.toggle("expanded");
        toggle.textContent = m.classList.contains("expanded") ? "Hide this version" : "Show this version";
      });
      actions.appendChild(toggle);
    }
    home.soon();
  }

  function showRevise(id, actions) {
    if (actions.querySelector(".revise")) return;
    const f = el("div", "revise");
    const input = el("input");
    input.placeholder = "What should change? (Enter sends)";
    input.dataset.testid = "feedback";
    f.appendChild(input);
    const send = () => { if (input.value.trim()) decide(id, "revise", input.value.trim()); };
    input.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); send(); }
    });
    f.appendChild(button("Send feedback", "primary", "send-feedback", send));
    actions.appendChild(f);
    input.focus();
  }

  // showCancel asks why before cancelling; the reason is optional.
  function showCancel(id, actions) {
    if (actions.querySelector(".cancel-reason")) return;
    const f = el("div", "revise cancel-reason");
    const input = el("input");
    input.placeholder = "Why cancel? (optional; Enter cancels)";
    input.maxLength = 500;
    input.dataset.testid = "cancel-reason";
    f.appendChild(input);
    const send = () => decide(id, "cancel", undefined, input.value.trim());
    input.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); send(); }
    });
    f.appendChild(button("Cancel the proposal", "danger", "confirm-cancel", send));
    actions.appendChild(f);
    input.focus();
  }

  async function decide(id, action, feedback, reason) {
    const u = user();
    if (!u) return;
    const m = previews.get(id);
    if (m) m.querySelectorAll("button").forEach((b) => { b.disabled = true; });
    const body = { user: u };
    if (feedback) body.feedback = feedback;
    if (reason) body.reason = reason;
    const { status, data } = await api("POST", "/api/v1/proposals/" + encodeURIComponent(id) + "/" + action, body);
    if (status >= 400) {
      alertMsg(data.error || "That did not work (" + status + ").");
      if (m && status !== 409) m.querySelectorAll("button").forEach((b) => { b.disabled = false; });
    } else if (status === 202) {
      const w = el("div", "msg working", "BobNet is planning");
      w.dataset.request = data.request_id;
      log.appendChild(w);
      scroll();
    }
  }

  function handle(ev) {
    const d = JSON.parse(ev.data).data;
    switch (ev.type) {
      case "message": renderMessage(d); break;
      case "working": {
        const w = el("div", "msg working", "BobNet is planning");
        w.dataset.request = d.request_id;
        w.dataset.testid = "working";
        log.appendChild(w);
        break;
      }
      case "reply": renderReply(d); home.soon(); break;
      case "proposal": renderPreview(d); break;
      case "proposal_updated": updatePreview(d); break;
      case "draft": showing.draft(d); break;
      case "run_progress": showing.run(d); break;
    }
    scroll();
  }

  function connect() {
    const ch = $("channel").value.trim();
    if (source) source.close();
    log.replaceChildren();
    previews.clear();
    reviewing.clear();
    showing.clear();
    localStorage.setItem("bobnet.channel", ch);
    if (location.pathname !== "/c/" + ch) history.replaceState(null, "", "/c/" + ch);
    let url = "/api/v1/channels/" + encodeURIComponent(ch) + "/events";
    if (token()) url += "?access_token=" + encodeURIComponent(token());
    source = new EventSource(url);
    ["message", "working", "reply", "proposal", "proposal_updated", "draft", "run_progress"].forEach((t) => source.addEventListener(t, handle));
    source.onopen = () => { $("conn").textContent = "connected to #" + ch; home.load(); };
    const mine = source;
    source.onerror = () => {
      $("conn").textContent = "reconnecting…";
      // A refused stream (too many open: 429 or 503) is one the browser
      // does not retry: connect again later, unless the channel changed.
      if (mine.readyState === EventSource.CLOSED) {
        setTimeout(() => { if (source === mine) connect(); }, 3000 + Math.random() * 4000);
      }
    };
  }

  $("channel").addEventListener("change", connect);
  $("composer").addEventListener("submit", async (e) => {
    e.preventDefault();
    const u = user();
    const text = $("text").value.trim();
    if (!u || !text) return;
    $("send").disabled = true;
    const { status, data } = await api("POST", "/api/v1/channels/" + encodeURIComponent($("channel").value.trim()) + "/messages", { user: u, text });
    $("send").disabled = false;
    if (status === 202 || status === 200) $("text").value = "";
    else alertMsg(data.error || "Sending failed (" + status + ").");
  });
  $("text").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); $("composer").requestSubmit(); }
  });

  connect();
})();
