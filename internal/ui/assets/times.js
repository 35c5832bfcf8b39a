// gitsync web UI: relative times ("5 min ago"); the absolute UTC time stays the hover
// title. Runs on load, after each live update and every 30 s.
(function () {
  "use strict";
  function rel(ms) {
    var s = Math.round((Date.now() - ms) / 1000), future = s < 0;
    s = Math.abs(s);
    var out = s < 45 ? "just now" : s < 90 ? "1 min" : s < 3600 ? Math.round(s / 60) + " min" :
      s < 5400 ? "1 hour" : s < 86400 ? Math.round(s / 3600) + " hours" : s < 172800 ? "1 day" : Math.round(s / 86400) + " days";
    if (out === "just now") return out;
    return future ? "in " + out : out + " ago";
  }
  function update() {
    document.querySelectorAll("time[datetime]").forEach(function (el) {
      var t = Date.parse(el.getAttribute("datetime"));
      if (!isNaN(t)) el.textContent = rel(t);
    });
  }
  update();
  setInterval(update, 30000);
  document.addEventListener("gitsync:updated", update);
})();
