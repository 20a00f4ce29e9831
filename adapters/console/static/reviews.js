// BobNet console: the Accept / Send back buttons of a run's card under
// review, on the reply that announces it, taken away for everyone once a
// reply says how the review ended. Every piece of text from the server is
// inserted with textContent, never as HTML.
window.BobNetReviews = function (h) {
  "use strict";
  const { el, button, user, api, alertMsg } = h;
  const reviews = new Map(); // "run card" -> the announcements of a card under review

  // reply gives an announcement of a card under review its Accept /
  // Send back buttons, and on a reply saying how a review ended, takes the
  // buttons of that card's announcements away.
  function reply(m, r) {
    const key = r.run_id + " " + r.card_id;
    if (r.decision) {
      (reviews.get(key) || []).forEach((a) => reviewDecided(a, r));
      reviews.delete(key);
      return;
    }
    m.classList.add("review");
    m.dataset.testid = "review";
    const actions = el("div", "actions");
    actions.appendChild(button("Accept", "primary", "review-accept", () => review(actions, r, "accept")));
    actions.appendChild(button("Send back", "", "review-sendback", () => showSendBack(actions, r)));
    m.appendChild(actions);
    reviews.set(key, (reviews.get(key) || []).concat([actions]));
  }

  function reviewDecided(actions, r) {
    const by = r.decision === "accepted" ? "Accepted by " + r.by : "Sent back by " + r.by + ": “" + r.reason + "”";
    const state = el("span", "state " + (r.decision === "accepted" ? "approved" : "cancelled"), by);
    state.dataset.testid = "review-state";
    actions.replaceChildren(state);
  }

  function showSendBack(actions, r) {
    if (actions.querySelector(".revise")) return;
    const f = el("div", "revise");
    const input = el("input");
    input.placeholder = "Why does it go back? (Enter sends)";
    input.maxLength = 1000;
    input.dataset.testid = "review-reason";
    f.appendChild(input);
    const send = () => { if (input.value.trim()) review(actions, r, "send_back", input.value.trim()); };
    input.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); send(); }
    });
    f.appendChild(button("Send back", "primary", "review-send", send));
    actions.appendChild(f);
    input.focus();
  }

  // review decides through the runs API; the reply that says how it was
  // decided takes the buttons away, for everyone watching.
  async function review(actions, r, decision, reason) {
    const u = user();
    if (!u) return;
    actions.querySelectorAll("button").forEach((b) => { b.disabled = true; });
    const body = { user: u, decision };
    if (reason) body.reason = reason;
    if (typeof r.round === "number") body.round = r.round; // an earlier round's buttons decide nothing
    const path = "/api/v1/runs/" + encodeURIComponent(r.run_id) + "/cards/" + encodeURIComponent(r.card_id) + "/review";
    const { status, data } = await api("POST", path, body);
    if (status >= 400) {
      alertMsg(data.error || "That did not work (" + status + ").");
      actions.querySelectorAll("button").forEach((b) => { b.disabled = false; });
    }
  }

  return { reply, clear: () => reviews.clear() };
};
