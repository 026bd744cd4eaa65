// demiurge ui: follow a running session. The timeline page names its
// event stream; each "timeline" event holds the timeline's new HTML, which
// replaces the old one, keeping open what the reader opened.
"use strict";
(function () {
  const tl = document.getElementById("timeline");
  const live = document.getElementById("live");
  if (!tl || !tl.dataset.events || !window.EventSource) return;
  const es = new EventSource(tl.dataset.events);
  const say = (text) => { if (live) live.textContent = text; };
  es.addEventListener("open", () => say("live: new records show as they land"));
  es.addEventListener("timeline", (e) => {
    const open = Array.from(tl.querySelectorAll("details[open][id]"), (d) => d.id);
    tl.innerHTML = e.data;
    for (const id of open) {
      const d = document.getElementById(id);
      if (d) d.open = true;
    }
    say("live: updated to record #" + e.lastEventId + " at " + new Date().toLocaleTimeString());
  });
  es.addEventListener("failure", (e) => { say("stopped following: " + e.data); es.close(); });
  es.addEventListener("error", () => say("reconnecting…"));
})();
