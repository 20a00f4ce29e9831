// BobNet console: the home list, console channels by latest activity and
// boards with their counts, fetched when the stream opens and after
// anything that may change them (not on a timer). Every piece of text
// from the server is inserted with textContent, never as HTML.
window.BobNetHome = function (h) {
  "use strict";
  const { $, el, api, safeURL, connect } = h;
  let homeTimer = null;
  function soon() {
    if (homeTimer) return;
    homeTimer = setTimeout(() => { homeTimer = null; load(); }, 300);
  }
  async function load() {
    const current = $("channel").value.trim();
    const [chs, bs] = await Promise.all([api("GET", "/api/v1/channels"), api("GET", "/api/v1/boards?limit=20")]);
    if (chs.status === 200) {
      const ul = $("channels");
      ul.replaceChildren();
      (chs.data.channels || []).forEach((c) => {
        const li = el("li", c.channel === current ? "current" : "");
        li.dataset.testid = "home-channel";
        const a = el("a", "", "#" + c.channel);
        a.href = "/c/" + encodeURIComponent(c.channel);
        a.addEventListener("click", (e) => { e.preventDefault(); $("channel").value = c.channel; connect(); });
        li.appendChild(a);
        li.appendChild(el("span", "when", c.last_type + " · " + new Date(c.latest_at).toLocaleString()));
        ul.appendChild(li);
      });
      if (!ul.children.length) ul.appendChild(el("li", "none", "No conversations yet"));
    }
    if (bs.status === 200) {
      const ul = $("boards");
      ul.replaceChildren();
      (bs.data.boards || []).forEach((b) => {
        const li = el("li");
        li.dataset.testid = "home-board";
        const a = el("a", "", b.key + " · " + b.name);
        const href = safeURL(b.url);
        if (href) a.href = href;
        li.appendChild(a);
        const counts = Object.keys(b.counts || {}).sort().map((k) => k + " " + b.counts[k]).join(", ");
        li.appendChild(el("span", "counts", b.cards + " cards" + (counts ? ": " + counts : "")));
        ul.appendChild(li);
      });
      if (!ul.children.length) ul.appendChild(el("li", "none", "No boards yet"));
    }
  }
  return { soon, load };
};
