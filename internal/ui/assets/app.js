// gitsync web UI: filters, the resource tree's object panel (deep links) and live updates
// (server-sent events from the UI server's shared cache, read with fetch once the page
// has loaded; the page swaps in fresh HTML).
(function () {
  "use strict";
  var view = document.body.dataset.view;
  var selected = null;

  function $(id) { return document.getElementById(id); }

  // --- applications: filters -------------------------------------------------------
  function fillNamespaces() {
    var sel = $("f-namespace"), seen = {}, cur = sel.value;
    document.querySelectorAll("#apps-body tr[data-namespace]").forEach(function (tr) { seen[tr.dataset.namespace] = true; });
    var names = Object.keys(seen).sort();
    sel.length = 1;
    names.forEach(function (n) { sel.add(new Option(n, n)); });
    sel.value = cur;
  }
  function applyFilters() {
    var ns = $("f-namespace").value, st = $("f-status").value, text = $("f-text").value.toLowerCase(), shown = 0, total = 0;
    document.querySelectorAll("#apps-body tr[data-name]").forEach(function (tr) {
      total++;
      var ok = (!ns || tr.dataset.namespace === ns) &&
        (!st || (" " + tr.dataset.status + " ").indexOf(" " + st + " ") >= 0) &&
        (!text || tr.textContent.toLowerCase().indexOf(text) >= 0);
      tr.hidden = !ok;
      if (ok) shown++;
    });
    $("count").textContent = shown + " of " + total + " shown";
  }
  if (view === "apps") {
    fillNamespaces();
    applyFilters();
    ["f-namespace", "f-status", "f-text"].forEach(function (id) { $(id).addEventListener("input", applyFilters); });
  }

  // --- one application: the object panel --------------------------------------------
  var app = $("app");
  function base() { return "/api/apps/" + encodeURIComponent(app.dataset.namespace) + "/" + encodeURIComponent(app.dataset.name); }
  function markSelected() {
    document.querySelectorAll("button.node").forEach(function (b) {
      var on = b.dataset.id === selected;
      b.classList.toggle("selected", on);
      b.setAttribute("aria-pressed", on ? "true" : "false");
    });
  }
  function showObject(id) {
    selected = id;
    // Deep link: the selected object is in the address (?object=Kind/namespace/name).
    var u = new URL(location.href);
    if (u.searchParams.get("object") !== id) { u.searchParams.set("object", id); history.replaceState(null, "", u); }
    markSelected();
    var panel = $("object");
    panel.hidden = false;
    $("obj-h").textContent = id;
    $("obj-note").textContent = "Loading…";
    panel.dataset.action = "";
    syncThis();
    fetch(base() + "/object?id=" + encodeURIComponent(id)).then(function (r) { return r.json(); }).then(function (o) {
      if (selected !== id) return;
      panel.dataset.action = o.action || "";
      $("obj-note").textContent = o.error || o.note || (o.action === "unchanged" ? "Equal to Git." : o.action ? "A sync would leave it " + o.action + "." : "");
      window.gitsyncDiff.render(o.diff || (o.git ? "no differences" : ""), $("obj-diff"), $("obj-diff-split"));
      $("obj-fields").textContent = o.fields && o.fields.length ? "Fields that differ: " + o.fields.join(", ") : "";
      $("obj-live").textContent = o.live || "(not shown)";
      $("obj-git").textContent = o.git || "(not from Git)";
      panel.dataset.loaded = id;
      syncThis();
    });
    document.dispatchEvent(new Event("gitsync:selected"));
  }
  // "Sync this" (a selective sync of the object shown: actions.js posts it) is offered
  // where a sync would change the object (created or configured) and where the page
  // offers a sync at all; disabled with the reason while the Sync button is (suspended).
  function syncThis() {
    var box = $("obj-actions"), btn = $("obj-sync"), panel = $("object");
    if (!box) return;
    var sync = document.querySelector('button[data-action="sync"]');
    var action = panel.dataset.loaded === selected ? panel.dataset.action : "";
    box.hidden = !sync || !(action === "created" || action === "configured");
    btn.dataset.object = selected || "";
    btn.disabled = !sync || sync.disabled;
    if (btn.disabled) btn.setAttribute("aria-describedby", "why-disabled"); else btn.removeAttribute("aria-describedby");
  }
  // The tree marks the objects the last selective sync applied (status.selectiveSync).
  function markSelective() {
    var banner = $("selective-banner");
    if (!banner) return;
    banner.querySelectorAll("code[data-object]").forEach(function (c) {
      var node = document.querySelector('button.node[data-id="' + CSS.escape(c.dataset.object) + '"]');
      if (!node || node.querySelector(".badge.selective")) return;
      var b = document.createElement("span");
      b.className = "badge selective";
      b.title = "applied by a selective sync from " + banner.dataset.revision;
      b.textContent = "synced alone";
      node.appendChild(document.createTextNode(" "));
      node.appendChild(b);
    });
  }
  window.gitsyncSelect = showObject;
  function treeKeys(e) {
    var nodes = Array.prototype.slice.call(document.querySelectorAll("button.node"));
    var i = nodes.indexOf(document.activeElement);
    if (i < 0) return;
    if (e.key === "ArrowDown" && i + 1 < nodes.length) { nodes[i + 1].focus(); e.preventDefault(); }
    if (e.key === "ArrowUp" && i > 0) { nodes[i - 1].focus(); e.preventDefault(); }
    if (e.key === "Home") { nodes[0].focus(); e.preventDefault(); }
    if (e.key === "End") { nodes[nodes.length - 1].focus(); e.preventDefault(); }
  }
  if (app) {
    document.addEventListener("click", function (e) {
      var b = e.target.closest("button.node");
      if (b) showObject(b.dataset.id);
    });
    document.addEventListener("keydown", treeKeys);
    document.addEventListener("gitsync:updated", syncThis);
    markSelective();
    var wanted = new URL(location.href).searchParams.get("object");
    if (wanted) {
      showObject(wanted);
      var node = document.querySelector('button.node[data-id="' + CSS.escape(wanted) + '"]');
      if (node) node.scrollIntoView({ block: "nearest" });
    }
  }

  // --- live updates -----------------------------------------------------------------
  // Swap the parts of the page that the server renders, from a fresh copy of the page.
  var timer = null, pending = false, changedIds = {};
  function swap(ids) {
    return fetch(location.pathname, { headers: { "Accept": "text/html" } }).then(function (r) {
      if (!r.ok) return null;
      return r.text();
    }).then(function (html) {
      if (html === null) return;
      var doc = new DOMParser().parseFromString(html, "text/html");
      var focused = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.id : null;
      // The sync options a person ticked outlive the swap.
      var options = {};
      document.querySelectorAll('input[id^="opt-"]').forEach(function (o) { options[o.id] = o.checked; });
      ids.forEach(function (id) {
        var fresh = doc.getElementById(id), old = $(id);
        if (fresh && old) old.innerHTML = fresh.innerHTML;
      });
      Object.keys(options).forEach(function (id) {
        var o = $(id);
        if (o) o.checked = options[id];
      });
      if (focused) {
        var again = document.querySelector('button.node[data-id="' + CSS.escape(focused) + '"]');
        if (again) again.focus();
      }
    });
  }
  var inFlight = false;
  function refresh() {
    timer = null;
    // One refresh at a time, so that an older copy of the page never lands last.
    if (inFlight) { pending = true; return; }
    inFlight = true;
    var ids = view === "apps" ? ["apps-body"] : view === "sources" ? ["sources-body"] : ["app-summary", "tree", "app-rest"];
    var changed = changedIds;
    changedIds = {};
    swap(ids).then(function () {
      if (view === "apps") { fillNamespaces(); applyFilters(); }
      if (view === "app") {
        markSelected();
        markSelective();
        if (selected && changed[selected]) showObject(selected);
      }
      document.body.dataset.updated = String(Date.now());
      document.dispatchEvent(new Event("gitsync:updated"));
    }).catch(function () {}).then(function () {
      inFlight = false;
      if (pending) { pending = false; refresh(); }
    });
  }
  function relevant(c) {
    if (view === "apps") return c.kind === "Application";
    if (view === "sources") return c.kind === "GitRepository" || c.kind === "HelmRepository";
    if (view === "app") return true; // any object of the tree, the app, its events
    return false;
  }
  function onChange(c) {
    if (!relevant(c)) return;
    changedIds[c.kind + "/" + (c.namespace ? c.namespace + "/" : "") + c.name] = true;
    if (!timer) timer = setTimeout(refresh, 50);
  }
  function showLive(on) {
    $("live").textContent = on ? "live" : "reconnecting…";
    $("live").className = on ? "live on" : "live";
  }
  // dispatch handles one server-sent event (a block of "field: value" lines).
  var retry = 1000;
  function dispatch(block) {
    var type = "message", data = [];
    block.split("\n").forEach(function (line) {
      if (line === "" || line.charAt(0) === ":") return;
      var i = line.indexOf(":"), field = i < 0 ? line : line.slice(0, i), value = i < 0 ? "" : line.slice(i + 1);
      if (value.charAt(0) === " ") value = value.slice(1);
      if (field === "event") type = value;
      if (field === "data") data.push(value);
      if (field === "retry" && /^\d+$/.test(value)) retry = Number(value);
    });
    if (type === "change" && data.length) {
      try { onChange(JSON.parse(data.join("\n"))); } catch (e) { /* not ours */ }
    }
  }
  // stream reads /api/events (server-sent events) with fetch rather than EventSource,
  // and only once the page has loaded: Chromium's virtual time (--virtual-time-budget,
  // as screenshot and link-preview tools run it) does not advance while a fetch is
  // pending, and an EventSource is pending for as long as it is open, so a page that
  // opened one would never settle there. A fetch stops counting once its response's
  // headers are in; reading the body after that does not hold virtual time. After a
  // reconnect the page refreshes, for the changes it missed meanwhile.
  function stream(again) {
    var wait = retry;
    fetch("/api/events", { headers: { "Accept": "text/event-stream" }, cache: "no-store" }).then(function (r) {
      if (!r.ok || !r.body) {
        var after = Number(r.headers.get("Retry-After"));
        if (after > 0) wait = after * 1000;
        throw new Error("event stream: " + r.status);
      }
      showLive(true);
      if (again && !timer) timer = setTimeout(refresh, 50);
      var reader = r.body.getReader(), decoder = new TextDecoder(), buf = "";
      function read() {
        return reader.read().then(function (chunk) {
          if (chunk.done) throw new Error("event stream ended");
          buf = (buf + decoder.decode(chunk.value, { stream: true })).replace(/\r\n?/g, "\n");
          var end;
          while ((end = buf.indexOf("\n\n")) >= 0) {
            dispatch(buf.slice(0, end));
            buf = buf.slice(end + 2);
          }
          return read();
        });
      }
      return read();
    }).catch(function () {
      showLive(false);
      setTimeout(function () { stream(true); }, wait);
    });
  }
  if (window.fetch && window.ReadableStream && view !== "") {
    var start = function () { setTimeout(function () { stream(false); }, 0); };
    if (document.readyState === "complete") start(); else window.addEventListener("load", start);
  }
})();
