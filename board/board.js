// The board page's one script: it shows move buttons to people signed in
// on the console (the console keeps their name and API token in this
// origin's localStorage), sends moves to the REST API, and redraws the
// board whenever a card changes, wherever the change came from.
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
    signin.textContent = "Signed in as " + user + ": use a card's “Move to” buttons.";
    document.querySelectorAll(".move, .crit").forEach(function (m) { m.hidden = false; });
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
        // Descriptions people opened stay open across the redraw.
        const opened = Array.prototype.map.call(document.querySelectorAll("article.card details[open]"), function (d) {
          return d.closest("article.card").id;
        });
        ["live-counts", "live"].forEach(function (id) {
          const fresh = doc.getElementById(id);
          const old = document.getElementById(id);
          if (fresh && old) { old.replaceWith(document.adoptNode(fresh)); }
        });
        showControls();
        opened.forEach(function (id) {
          const d = document.querySelector("#" + CSS.escape(id) + " details");
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

  document.addEventListener("click", function (ev) {
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

  function listen() {
    const es = new EventSource("/boards/" + encodeURIComponent(boardID) + "/events");
    let opened = false;
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
    es.addEventListener("error", function () { document.body.dataset.live = "reconnecting"; });
  }

  showControls();
  listen();
})();
