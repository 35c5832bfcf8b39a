// gitsync web UI: actions of one application (sync with options, "sync this" of one
// object, preview, rollback, suspend, resume). Their results and errors go to
// #action-log, outside the parts that live updates replace, and stay until the next
// action.
(function () {
  "use strict";
  var app = document.getElementById("app");
  if (!app) return;
  var csrf = document.querySelector('meta[name="csrf-token"]').content;
  var log = document.getElementById("action-log");
  function base() { return "/api/apps/" + encodeURIComponent(app.dataset.namespace) + "/" + encodeURIComponent(app.dataset.name); }
  function stamp() { return new Date().toISOString().slice(11, 19) + "Z"; }

  // note adds one lasting line to the log (the newest first, five kept).
  function note(text, bad) {
    var p = document.createElement("p");
    p.className = "result" + (bad ? " error" : " ok");
    if (bad) p.setAttribute("role", "alert");
    var t = document.createElement("small");
    t.textContent = stamp() + " ";
    p.appendChild(t);
    p.appendChild(document.createTextNode(text));
    var close = document.createElement("button");
    close.type = "button"; close.className = "dismiss"; close.textContent = "×";
    close.setAttribute("aria-label", "Dismiss");
    close.addEventListener("click", function () { p.remove(); });
    p.appendChild(close);
    log.insertBefore(p, log.firstChild);
    while (log.querySelectorAll("p.result").length > 5) log.querySelector("p.result:last-of-type").remove();
    return p;
  }
  function answer(r) {
    return r.json().catch(function () { return { error: "HTTP " + r.status }; }).then(function (o) {
      if (!r.ok && !o.error) o.error = "HTTP " + r.status;
      return o;
    });
  }
  function post(action, body, label) {
    // A preview describes the state before this action: it no longer holds.
    document.getElementById("preview").hidden = true;
    var pending = note(label + "…", false);
    return fetch(base() + "/" + action, {
      method: "POST", headers: { "X-CSRF-Token": csrf, "Content-Type": "application/json" }, body: JSON.stringify(body || {})
    }).then(answer).then(function (o) {
      pending.remove();
      note(o.error ? label + " failed: " + o.error : o.result, !!o.error);
    }, function (e) { pending.remove(); note(label + " failed: " + e, true); });
  }
  function preview() {
    var pending = note("Preview of a sync…", false);
    var box = document.getElementById("preview");
    var prune = document.getElementById("opt-prune");
    return fetch(base() + "/preview" + (prune ? "?prune=" + prune.checked : "")).then(answer).then(function (o) {
      pending.remove();
      if (o.error) { note("Preview failed: " + o.error, true); return; }
      box.hidden = false;
      var list = document.getElementById("preview-list");
      list.textContent = "";
      document.getElementById("preview-sum").textContent = o.changes.length + " object(s) would change, " + o.unchanged + " unchanged.";
      o.changes.forEach(function (c) {
        var d = document.createElement("details");
        d.open = true;
        var s = document.createElement("summary");
        s.textContent = c.subject + " — " + c.action + (c.fields && c.fields.length ? " (" + c.fields.join(", ") + ")" : "");
        d.appendChild(s);
        list.appendChild(d);
        if (c.action === "created" || c.action === "configured") {
          var one = document.createElement("button");
          one.type = "button"; one.textContent = "Sync this";
          one.dataset.action = "sync-object"; one.dataset.object = c.subject;
          one.setAttribute("aria-label", "Sync only " + c.subject);
          d.appendChild(one);
        }
        if (c.action === "pruned") {
          var p = document.createElement("p");
          p.className = "pruned";
          p.textContent = "Git no longer holds it: the sync deletes it.";
          d.appendChild(p);
          return;
        }
        var pre = document.createElement("pre"), split = document.createElement("div");
        pre.className = "diff"; pre.tabIndex = 0; split.className = "diff-split";
        d.appendChild(pre); d.appendChild(split);
        window.gitsyncDiff.render(c.diff || "", pre, split);
      });
      note("Preview: " + o.changes.length + " object(s) would change", false);
    }, function (e) { pending.remove(); note("Preview failed: " + e, true); });
  }
  document.addEventListener("click", function (e) {
    var b = e.target.closest("button[data-action]");
    if (!b || b.disabled) return;
    var a = b.dataset.action;
    if (a === "preview") { preview(); return; }
    if (a === "sync") {
      var hooks = document.getElementById("opt-hooks");
      var prune = document.getElementById("opt-prune");
      post("sync", { hooks: !!(hooks && hooks.checked), prune: prune ? prune.checked : null }, "Sync");
      return;
    }
    if (a === "sync-object") {
      // A selective sync: this object only, after a dry-run of the whole revision.
      post("sync", { resources: [b.dataset.object] }, "Sync of " + b.dataset.object);
      return;
    }
    if (a === "rollback") {
      if (!window.confirm("Pin " + app.dataset.name + " to " + b.dataset.revision + "? Newer commits wait until it is resumed.")) return;
      post("rollback", { revision: b.dataset.revision }, "Rollback to " + b.dataset.revision);
      return;
    }
    post(a, {}, a.charAt(0).toUpperCase() + a.slice(1));
  });
})();
