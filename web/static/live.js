// live.js: the pages' one script (served from /static, as the Content-Security-Policy
// requires; no build step). A page that shows a run under way is sent with main[data-live]
// (how often to look again, in milliseconds) and its changing parts marked [data-live-part]
// with an id. This fetches the page again at that pace and puts each part of the new page in
// place of the old one, until the page comes back without data-live: the run ended, and the
// parts now show its outcome. Nothing else is touched, so a form being filled in stays as it
// is. When the page cannot be fetched it says so and tries again, more slowly.
(() => {
  "use strict";
  const main = document.querySelector("main[data-live]");
  if (!main) return;
  let every = Number(main.dataset.live) || 1000;
  let failures = 0;

  const note = (text) => {
    let el = document.getElementById("live-note");
    if (!el) {
      el = document.createElement("p");
      el.id = "live-note";
      el.className = "note";
      main.prepend(el);
    }
    el.textContent = text;
    el.hidden = text === "";
  };

  const swap = (doc) => {
    for (const part of document.querySelectorAll("[data-live-part]")) {
      const next = part.id && doc.getElementById(part.id);
      if (next) part.replaceWith(document.importNode(next, true));
    }
    document.title = doc.title;
  };

  const look = async () => {
    try {
      const res = await fetch(location.href, { credentials: "same-origin", cache: "no-store" });
      if (!res.ok) throw new Error("HTTP " + res.status);
      const doc = new DOMParser().parseFromString(await res.text(), "text/html");
      swap(doc);
      failures = 0;
      note("");
      const next = doc.querySelector("main");
      if (!next || !next.hasAttribute("data-live")) {
        main.removeAttribute("data-live");
        return; // ended: the page shows the outcome
      }
      every = Number(next.dataset.live) || every;
      main.dataset.live = String(every);
    } catch (err) {
      failures++;
      note("Live updates paused (" + err.message + "); trying again.");
    }
    setTimeout(look, every * Math.min(2 ** failures, 30));
  };
  setTimeout(look, every);
})();
