// gitsync web UI: coloured diffs, unified or side by side (window.gitsyncDiff.render).
(function () {
  "use strict";
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function kindOf(line) {
    if (line.indexOf("@@") === 0) return "hunk";
    if (line.indexOf("+++") === 0 || line.indexOf("---") === 0) return "file";
    if (line[0] === "+") return "add";
    if (line[0] === "-") return "del";
    return "ctx";
  }
  // unified fills pre with one span per line, coloured by its kind.
  function unified(text, pre) {
    pre.textContent = "";
    text.split("\n").forEach(function (line, i, all) {
      if (i === all.length - 1 && line === "") return;
      pre.appendChild(el("span", "dl " + kindOf(line), line + "\n"));
    });
  }
  // split fills box with a two-column table: live on the left, Git on the right; a run
  // of removed lines faces the run of added lines that follows it.
  function split(text, box) {
    box.textContent = "";
    var table = el("table", "split"), body = el("tbody"), dels = [], adds = [];
    var head = el("thead"), hr = el("tr");
    hr.appendChild(el("th", "", "Live")); hr.appendChild(el("th", "", "Git"));
    head.appendChild(hr); table.appendChild(head);
    function row(l, lk, r, rk) {
      var tr = el("tr");
      tr.appendChild(el("td", "dl " + lk, l));
      tr.appendChild(el("td", "dl " + rk, r));
      body.appendChild(tr);
    }
    function flush() {
      for (var i = 0; i < Math.max(dels.length, adds.length); i++) {
        row(i < dels.length ? dels[i] : "", i < dels.length ? "del" : "none", i < adds.length ? adds[i] : "", i < adds.length ? "add" : "none");
      }
      dels = []; adds = [];
    }
    text.split("\n").forEach(function (line) {
      var k = kindOf(line);
      if (k === "file" || line === "") return;
      if (k === "del") { if (adds.length) flush(); dels.push(line.slice(1)); return; }
      if (k === "add") { adds.push(line.slice(1)); return; }
      flush();
      if (k === "hunk") row(line, "hunk", line, "hunk");
      else row(line.slice(1), "ctx", line.slice(1), "ctx");
    });
    flush();
    table.appendChild(body);
    box.appendChild(table);
  }
  function mode() {
    var on = document.querySelector("input[data-diff-mode]:checked");
    return on ? on.value : "unified";
  }
  // render shows text in pre (unified) or box (side by side), as the toggle says.
  function render(text, pre, box) {
    unified(text, pre);
    split(text, box);
    var sbs = mode() === "split" && text.indexOf("\n") >= 0;
    pre.hidden = sbs;
    box.hidden = !sbs;
  }
  // A toggle (the object panel's, the preview's) switches every diff of the page, and
  // the other toggles follow it.
  document.addEventListener("change", function (e) {
    if (!e.target.dataset || e.target.dataset.diffMode === undefined) return;
    var v = e.target.value;
    document.querySelectorAll("input[data-diff-mode]").forEach(function (r) { r.checked = r.value === v; });
    var sbs = v === "split";
    document.querySelectorAll("pre.diff").forEach(function (pre) {
      var box = pre.nextElementSibling;
      if (!box || !box.classList.contains("diff-split")) return;
      pre.hidden = sbs && pre.textContent.indexOf("\n") >= 0;
      box.hidden = !pre.hidden;
    });
  });
  window.gitsyncDiff = { render: render, mode: mode };
})();
