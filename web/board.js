// The board page's one script: it shows the "Move to" menus and lets cards
// be dragged between columns for people signed in on the console (the
// console keeps their name and API token in this origin's localStorage),
// sends moves to the REST API, and redraws the board whenever a card
// changes, wherever the change came from.
(function () {
  "use strict";
  const boardID = document.body.dataset.board;
  const user = localStorage.getItem("bobnet.user") || "";
  const token = localStorage.getItem("bobnet.token") || "";
  const notice = document.getElementById("notice");

  function say(text) { notice.textContent = text; }

  function showControls() {
    const signin = document.getElementById("signin");
    if (!user) {
      signin.textContent = "Sign in on the console to move cards here.";
      return;
    }
    signin.textContent = "Signed in as " + user + ": drag a card to another column, or use its “Move to” menu.";
    document.querySelectorAll(".move, .crit").forEach(function (m) { m.hidden = false; });
    const run = document.getElementById("run-now");
    if (run) { run.hidden = document.querySelector('[data-run-state="running"]') !== null; }
    document.querySelectorAll("article.card").forEach(function (c) { c.draggable = true; });
  }

  // The graph is drawn to fit its box unless someone asked for its actual
  // size; the choice outlives redraws.
  let zoom = "fit";
  function applyZoom() {
    const box = document.getElementById("graph-scroll");
    if (!box) { return; }
    box.classList.toggle("fit", zoom === "fit");
    const hint = document.getElementById("scroll-hint");
    if (hint) { hint.hidden = box.scrollWidth <= box.clientWidth + 1; }
    document.querySelectorAll("button[data-zoom]").forEach(function (b) {
      b.setAttribute("aria-pressed", String(b.dataset.zoom === zoom));
    });
  }

  // focused names the card button that has keyboard focus, to give it
  // back after a redraw.
  function focused() {
    const active = document.activeElement;
    const card = active && active.closest ? active.closest("article.card") : null;
    if (!card) { return null; }
    let selector = "";
    if (active.dataset.move) { selector = '[data-move="' + active.dataset.move + '"]'; }
    if (active.dataset.criterion) { selector = '[data-criterion="' + active.dataset.criterion + '"]'; }
    return [card.dataset.card, selector];
  }

  // refresh redraws the counts, the graph and the columns from the
  // server's page, keeping keyboard focus on the same button if it is
  // still there. What has focus and which descriptions are open are read
  // when the new page arrives, not when it was asked for: someone who
  // tabbed to another card meanwhile keeps that card, and an Enter
  // pressed next acts on the card they chose.
  let refreshing = null;
  let again = false;
  function refresh() {
    if (refreshing) { again = true; return refreshing; }
    refreshing = fetch(location.pathname, { headers: { Accept: "text/html" }, cache: "no-store" })
      .then(function (r) { if (!r.ok) { throw new Error("HTTP " + r.status); } return r.text(); })
      .then(function (html) {
        const doc = new DOMParser().parseFromString(html, "text/html");
        const focusKey = focused();
        // Descriptions and menus people opened stay open across the
        // redraw, and the columns keep their sideways scroll.
        const opened = Array.prototype.map.call(document.querySelectorAll("article.card details[open]"), function (d) {
          return [d.closest("article.card").id, d.className];
        });
        const columns = document.getElementById("columns");
        const scrolled = columns ? columns.scrollLeft : 0;
        ["live-counts", "live"].forEach(function (id) {
          const fresh = doc.getElementById(id);
          const old = document.getElementById(id);
          if (fresh && old) { old.replaceWith(document.adoptNode(fresh)); }
        });
        showControls();
        applyZoom();
        const fresh = document.getElementById("columns");
        if (fresh) { fresh.scrollLeft = scrolled; }
        opened.forEach(function (o) {
          const d = document.querySelector("#" + CSS.escape(o[0]) + " details." + CSS.escape(o[1]));
          if (d) { d.open = true; }
        });
        if (focusKey) {
          // The same button if it can still be pressed; else the card
          // itself. After a move the button that made it is disabled, and
          // focus on another of the card's buttons would let a second
          // Enter move the card again, somewhere else.
          const card = document.getElementById(focusKey[0]);
          const target = card && focusKey[1] && card.querySelector(focusKey[1] + ":not([disabled])");
          if (target) {
            const menu = target.closest("details");
            if (menu) { menu.open = true; }
            target.focus();
          } else if (card) {
            card.tabIndex = -1;
            card.focus();
          }
        }
        document.body.dataset.refreshed = String(Number(document.body.dataset.refreshed || "0") + 1);
      })
      .catch(function (err) { say("Could not reload the board (" + err.message + "); it will try again on the next change."); })
      .finally(function () {
        refreshing = null;
        if (again) { again = false; refresh(); }
      });
    return refreshing;
  }

  // patch sends one change of a card to the API; done says what happened
  // when it worked.
  function patch(card, change, done) {
    const headers = { "Content-Type": "application/json" };
    if (token) { headers.Authorization = "Bearer " + token; }
    change.user = user;
    change.via = "page";
    fetch("/api/v1/cards/" + encodeURIComponent(card.dataset.card), {
      method: "PATCH",
      headers: headers,
      body: JSON.stringify(change)
    }).then(function (r) {
      return r.json().catch(function () { return {}; }).then(function (body) {
        if (r.ok) {
          say(done);
          return refresh();
        }
        if (r.status === 401) {
          say("The server needs the API token: open the console, enter it there, then come back.");
          return null;
        }
        say(body.error || ("The move was refused (HTTP " + r.status + ")."));
        return refresh();
      });
    }).catch(function (err) { say("The move did not reach the server: " + err.message); });
  }

  function move(card, status) {
    say("Moving " + card.dataset.handle + " to " + status + "…");
    patch(card, { status: status }, card.dataset.handle + " moved to " + status + ".");
  }

  // startRun starts a run of the board: its cards go back to their
  // starting statuses and the runners begin (docs/runs.md).
  function startRun() {
    const headers = { "Content-Type": "application/json" };
    if (token) { headers.Authorization = "Bearer " + token; }
    say("Starting a run…");
    fetch("/api/v1/boards/" + encodeURIComponent(boardID) + "/runs", {
      method: "POST", headers: headers, body: JSON.stringify({ user: user })
    }).then(function (r) {
      return r.json().catch(function () { return {}; }).then(function (body) {
        if (r.status === 201) {
          say("Run " + body.number + " started.");
          return refresh();
        }
        if (r.status === 401) {
          say("The server needs the API token: open the console, enter it there, then come back.");
          return null;
        }
        say(body.error || ("The run was refused (HTTP " + r.status + ")."));
        return null;
      });
    }).catch(function (err) { say("The run did not reach the server: " + err.message); });
  }

  document.addEventListener("click", function (ev) {
    if (ev.target.id === "run-now") {
      startRun();
      return;
    }
    const z = ev.target.closest ? ev.target.closest("button[data-zoom]") : null;
    if (z) {
      zoom = z.dataset.zoom;
      applyZoom();
      return;
    }
    const button = ev.target.closest ? ev.target.closest("button[data-move], button[data-criterion]") : null;
    if (!button || button.disabled) { return; }
    const card = button.closest("article.card");
    if (!card) { return; }
    if (button.dataset.move) {
      move(card, button.dataset.move);
      return;
    }
    const done = button.dataset.done === "true";
    const index = Number(button.dataset.criterion);
    patch(card, { criterion: { index: index, done: done } },
      card.dataset.handle + ": criterion " + (index + 1) + " marked " + (done ? "done" : "not done") + ".");
  });

  // Drag and drop: while a card is dragged every column says whether it
  // can take it. A column the dependency rule refuses says why (the same
  // reason its menu item gives) and takes no drop.
  let dragged = null;
  function endDrag() {
    document.body.classList.remove("dragging");
    document.querySelectorAll("section.column").forEach(function (col) {
      col.classList.remove("drop-ok", "drop-refused", "drop-over", "drop-same");
      col.querySelector(".drop-note").textContent = "";
    });
    if (dragged) { dragged.classList.remove("is-dragged"); }
    dragged = null;
  }
  document.addEventListener("dragstart", function (ev) {
    const card = ev.target.closest ? ev.target.closest("article.card") : null;
    if (!card || !user) { return; }
    dragged = card;
    card.classList.add("is-dragged");
    ev.dataTransfer.effectAllowed = "move";
    ev.dataTransfer.setData("text/plain", card.dataset.handle);
    document.body.classList.add("dragging");
    document.querySelectorAll("section.column").forEach(function (col) {
      const status = col.dataset.status;
      if (status === card.dataset.status) { col.classList.add("drop-same"); return; }
      const item = card.querySelector('button[data-move="' + CSS.escape(status) + '"]');
      if (!item || item.disabled) {
        col.classList.add("drop-refused");
        col.querySelector(".drop-note").textContent = card.dataset.handle + " can't move here: " + (item ? item.title : "not allowed");
        return;
      }
      col.classList.add("drop-ok");
    });
  });
  document.addEventListener("dragover", function (ev) {
    const col = dragged && ev.target.closest ? ev.target.closest("section.column.drop-ok") : null;
    if (!col) { return; }
    ev.preventDefault();
    ev.dataTransfer.dropEffect = "move";
    document.querySelectorAll("section.column.drop-over").forEach(function (c) { if (c !== col) { c.classList.remove("drop-over"); } });
    col.classList.add("drop-over");
  });
  document.addEventListener("drop", function (ev) {
    const col = dragged && ev.target.closest ? ev.target.closest("section.column.drop-ok") : null;
    if (!col) { return; }
    ev.preventDefault();
    const card = dragged;
    endDrag();
    move(card, col.dataset.status);
  });
  document.addEventListener("dragend", endDrag);

  function listen(again) {
    const es = new EventSource("/boards/" + encodeURIComponent(boardID) + "/events");
    let opened = !!again;
    es.addEventListener("open", function () {
      // After a reconnect, changes may have been missed: redraw.
      if (opened) { refresh(); }
      opened = true;
      document.body.dataset.live = "yes";
    });
    es.addEventListener("card", function (ev) {
      let data = null;
      try { data = JSON.parse(ev.data); } catch (e) { data = null; }
      if (data && data.card) {
        const what = (data.changes || []).map(function (c) { return c.field + " " + c.from + " → " + c.to; }).join(", ");
        say(data.card.handle + " changed by " + (data.actor || "someone") + (data.via ? " (" + data.via + ")" : "") + ": " + what + ".");
      }
      refresh();
    });
    es.addEventListener("error", function () {
      document.body.dataset.live = "reconnecting";
      // A refused stream (too many open: 429 or 503) is one the browser
      // does not retry: open a new one later, a little apart from others.
      if (es.readyState === EventSource.CLOSED) {
        setTimeout(function () { listen(true); }, 3000 + Math.random() * 4000);
      }
    });
  }

  showControls();
  applyZoom();
  listen();
})();
