// BobNet console: a preview's lines of text made from the server's data:
// what a revision changed, what a plan would change on a board, and who
// has approved. They return strings, which the page inserts with
// textContent, never as HTML.
window.BobNetText = (function () {
  "use strict";
  // changeItems turns a revision's changes into one readable line each.
  function changeItems(c) {
    const out = [];
    (c.added || []).forEach((x) => out.push("Added card “" + x + "”"));
    (c.removed || []).forEach((x) => out.push("Removed card “" + x + "”"));
    (c.retitled || []).forEach((x) => out.push("Retitled “" + x.from + "” → “" + x.to + "”"));
    (c.reassigned || []).forEach((x) => out.push("Reassigned “" + x.subject + "”: " + x.from + " → " + x.to));
    (c.links_added || []).forEach((x) => out.push("New dependency: " + x));
    (c.links_removed || []).forEach((x) => out.push("Dependency dropped: " + x));
    (c.updates_added || []).forEach((x) => out.push("New card change: " + x));
    (c.updates_removed || []).forEach((x) => out.push("Card change dropped: " + x));
    if (c.board_changed) out.push("Board renamed “" + c.board_changed.from + "” → “" + c.board_changed.to + "”");
    return out;
  }

  function boardChangeText(c) {
    if (c.field === "depends_on") return c.card + " “" + c.title + "” will wait on " + c.to;
    if (c.field === "body") return c.card + " “" + c.title + "”: description rewritten";
    return c.card + " “" + c.title + "”: " + c.field + " " + c.from + " → " + c.to;
  }

  // quorumText is the approvals line: "1 of 2 approvals: @bob · policy
  // console:release"; empty under the built-in one-approval rule.
  function quorumText(q) {
    if (!q || (q.key === "built-in" && q.needed <= 1)) return "";
    const parts = [];
    const got = q.approvals || [];
    if (q.needed > 1) parts.push(got.length + " of " + q.needed + " approvals" + (got.length ? ": " + got.map((u) => "@" + u).join(", ") : ""));
    parts.push("policy " + q.key + " (deciders: " + q.policy.deciders.join(", ") + ")");
    if (!q.policy.self_approval) parts.push("the requester's own approval does not count");
    return parts.join(" · ");
  }

  return { changeItems, boardChangeText, quorumText };
})();
