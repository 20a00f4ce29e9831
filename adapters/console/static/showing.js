// BobNet console: a plan shown while the model writes it (`draft` events)
// and a run's progress (`run_progress` events). Every piece of text from
// the server is inserted with textContent, never as HTML.
window.BobNetShowing = function (h) {
  "use strict";
  const { el, log, labelled, safeURL, clearWorking } = h;

  // A request's draft: the cards the model has written so far, shown as
  // drafts (not yet checked) until the answer replaces them.
  const drafts = new Map(); // request id -> element
  function renderDraft(d) {
    let m = drafts.get(d.request_id);
    if (!m) {
      m = el("div", "msg preview draft");
      m.dataset.testid = "draft";
      m.dataset.request = d.request_id;
      drafts.set(d.request_id, m);
      clearWorking(d.request_id);
      log.appendChild(m);
    }
    m.replaceChildren(el("div", "who", "BobNet · drafting a plan — not yet checked"));
    m.appendChild(el("h3", "board-name", d.title || "Untitled board"));
    m.appendChild(el("div", "meta", (d.cards || []).length + " draft cards so far"));
    const grid = el("div", "cards");
    (d.cards || []).forEach((c) => {
      const card = el("div", "card draft");
      card.dataset.testid = "draft-card";
      card.appendChild(el("h4", "", c.title));
      const tags = el("div", "tags");
      tags.appendChild(el("span", "tag warn", "Draft"));
      if (c.assignee) tags.appendChild(labelled("Assignee", c.assignee));
      card.appendChild(tags);
      grid.appendChild(card);
    });
    m.appendChild(grid);
  }

  // answered takes away the draft of the request an answer is for.
  function answered(requestID) {
    if (!requestID) return;
    const m = drafts.get(requestID);
    if (m) { m.remove(); drafts.delete(requestID); }
  }

  // A run's progress: one live panel per board, above the composer,
  // redrawn as its latest run's cards move.
  const dock = document.getElementById("runs-live");
  const runs = new Map(); // board id -> element
  const taskMark = { pending: "○", in_progress: "◐", complete: "✓", error: "✗" };
  function renderRun(d) {
    let m = runs.get(d.board_id);
    if (!m) {
      m = el("section", "run-progress");
      m.dataset.testid = "run-progress";
      runs.set(d.board_id, m);
      dock.appendChild(m);
    }
    m.dataset.run = d.run_id;
    m.dataset.state = d.state;
    const tasks = d.tasks || [];
    const done = tasks.filter((t) => t.task === "complete").length;
    const head = el("div", "run-head");
    head.appendChild(el("span", "run-title", "Run " + d.number + " · " + d.board_title));
    const summary = el("span", "run-summary", done + " of " + tasks.length + " cards done · " + (d.ended ? d.state : "running"));
    summary.dataset.testid = "run-summary";
    head.appendChild(summary);
    const href = d.edition_url && safeURL(d.edition_url);
    if (href) {
      const a = el("a", "", d.ended ? "Read the edition" : "Open the run page");
      a.href = href;
      a.dataset.testid = "edition-link";
      head.appendChild(a);
    }
    const close = el("button", "run-close", "×");
    close.type = "button";
    close.title = "Hide this run's progress";
    close.addEventListener("click", () => { m.remove(); runs.delete(d.board_id); });
    head.appendChild(close);
    const ul = el("ul", "tasks");
    tasks.forEach((t) => {
      const li = el("li", "task " + t.task);
      li.dataset.testid = "run-task";
      li.dataset.status = t.task;
      li.title = t.status + (t.error ? ": " + t.error : "");
      li.appendChild(el("span", "mark", taskMark[t.task] || "○"));
      li.appendChild(document.createTextNode(" " + t.handle + " " + t.title + (t.assignee ? " · " + t.assignee : "")));
      if (t.error) li.appendChild(el("span", "task-error", " — " + t.error));
      ul.appendChild(li);
    });
    m.replaceChildren(head, ul);
  }

  return {
    draft: renderDraft,
    answered,
    run: renderRun,
    clear() { drafts.clear(); runs.clear(); dock.replaceChildren(); },
  };
};
