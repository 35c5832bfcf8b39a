// gitsync web UI: the application graph. It is drawn (SVG) from the resource list that
// the server renders from internal/tree, so both views show one tree: the Application,
// its objects with owner edges to their children, and the hooks of the last run. Nodes
// carry health and sync/drift; a node with children folds; filters by kind, health and
// drift keep a matching node's ancestors (dimmed) so that its edges still make sense.
// It is the view an application opens in when it fits the screen; the list is one click
// away, and the choice stays in the address (?view=list).
(function () {
  "use strict";
  var app = document.getElementById("app");
  if (!app || !document.getElementById("graph")) return;
  var NS = "http://www.w3.org/2000/svg", W = 210, H = 40, DX = 250, DY = 52;
  var folded = {};
  function $(id) { return document.getElementById(id); }
  function svg(tag, attrs, text) {
    var e = document.createElementNS(NS, tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined) e.textContent = text;
    return e;
  }
  // read turns the list (ul.tree > li > button.node) into nodes.
  function read(ul) {
    var out = [];
    if (!ul) return out;
    Array.prototype.forEach.call(ul.children, function (li) {
      var b = li.querySelector(":scope > button.node");
      if (!b) return;
      var d = b.dataset;
      out.push({ id: d.id, kind: d.kind, name: d.name, health: d.health, drift: !!d.drift, managed: !!d.managed,
        hook: d.hook || "", children: read(li.querySelector(":scope > ul")) });
    });
    return out;
  }
  function filters() {
    return { kind: $("g-kind").value, health: $("g-health").value, drift: $("g-drift").checked };
  }
  function matches(n, f) {
    return (!f.kind || n.kind === f.kind) && (!f.health || n.health === f.health) && (!f.drift || n.drift);
  }
  // keep marks which nodes are drawn: those that match, and their ancestors (dimmed).
  function keep(nodes, f, out) {
    var any = false;
    nodes.forEach(function (n) {
      var below = keep(n.children, f, out), self = matches(n, f);
      if (self || below) { out[n.id] = self ? "match" : "dim"; any = true; }
    });
    return any;
  }
  function fillKinds(nodes, seen) {
    nodes.forEach(function (n) { seen[n.kind] = true; fillKinds(n.children, seen); });
    return seen;
  }
  function draw() {
    var had = document.activeElement, refocus = had && $("graph").contains(had) ?
      (had.dataset.fold ? '[data-fold="' + CSS.escape(had.dataset.fold) + '"]' : 'g.gnode[data-id="' + CSS.escape(had.dataset.id || "") + '"]') : null;
    var root = document.querySelector("#tree ul.tree"), box = $("graph");
    var nodes = read(root), f = filters(), shown = {};
    var sel = $("g-kind"), cur = sel.value;
    sel.length = 1;
    Object.keys(fillKinds(nodes, {})).sort().forEach(function (k) { sel.add(new Option(k, k)); });
    sel.value = cur;
    keep(nodes, f, shown);
    var selected = new URL(location.href).searchParams.get("object");
    var s = svg("svg", { role: "group", "aria-label": "Application graph", class: "graph" });
    var edges = svg("g", { class: "edges" }), layer = svg("g", { class: "nodes" });
    s.appendChild(edges); s.appendChild(layer);
    var row = 0, maxDepth = 0, count = 0;
    function place(n, depth, parent) {
      var x = 8 + depth * DX, y = 8 + row * DY;
      maxDepth = Math.max(maxDepth, depth);
      if (parent) {
        edges.appendChild(svg("path", { class: "edge" + (n.hook ? " hook" : ""), "data-from": parent.id, "data-to": n.id, d: "M" + (parent.x + W) + "," + (parent.y + H / 2) +
          " C" + (parent.x + W + 20) + "," + (parent.y + H / 2) + " " + (x - 20) + "," + (y + H / 2) + " " + x + "," + (y + H / 2) }));
      }
      var kids = n.children.filter(function (c) { return shown[c.id]; });
      var state = n.hook ? n.hook + " hook" : n.root ? n.sync : n.drift ? "drift" : n.managed ? "Synced" : "owned";
      var cls = "gnode health-" + (n.health || "Unknown").toLowerCase() + (n.drift ? " drifted" : "") + (n.hook ? " hook" : "") +
        (shown[n.id] === "dim" ? " dim" : "") + (n.id === selected ? " selected" : "");
      var g = svg("g", { class: cls, transform: "translate(" + x + "," + y + ")", "data-id": n.id });
      if (!n.root) {
        g.setAttribute("role", "button"); g.setAttribute("tabindex", "0");
        g.setAttribute("aria-label", n.kind + " " + n.name + ", " + n.health + ", " + state);
      }
      g.appendChild(svg("rect", { width: W, height: H, rx: 6, class: "box" }));
      g.appendChild(svg("rect", { width: 6, height: H, rx: 3, class: "stripe" }));
      g.appendChild(svg("text", { x: 12, y: 15, class: "gkind" }, n.kind + " · " + (n.health || "Unknown")));
      var label = n.name.length > 24 ? n.name.slice(0, 23) + "…" : n.name;
      var t = svg("text", { x: 12, y: 32, class: "gname" }, label);
      t.appendChild(svg("title", {}, n.id));
      g.appendChild(t);
      g.appendChild(svg("text", { x: W - 6, y: 15, class: "gstate" + (n.drift ? " bad" : ""), "text-anchor": "end" }, state));
      if (n.children.length) {
        var fold = svg("g", { class: "fold", role: "button", tabindex: "0", "data-fold": n.id,
          "aria-label": (folded[n.id] ? "Expand " : "Collapse ") + n.kind + " " + n.name, "aria-expanded": folded[n.id] ? "false" : "true",
          transform: "translate(" + (W - 14) + "," + (H - 14) + ")" });
        fold.appendChild(svg("rect", { width: 12, height: 12, rx: 2 }));
        fold.appendChild(svg("text", { x: 6, y: 10, "text-anchor": "middle" }, folded[n.id] ? "+" : "−"));
        g.appendChild(fold);
      }
      layer.appendChild(g);
      count++;
      row++;
      var me = { x: x, y: y, id: n.id };
      if (!folded[n.id]) kids.forEach(function (c) { place(c, depth + 1, me); });
    }
    var top = { id: "", root: true, kind: "Application", name: app.dataset.name, health: $("tree-root").dataset.health,
      sync: $("tree-root").dataset.sync, children: nodes };
    shown[""] = "match";
    place(top, 0, null);
    s.setAttribute("width", 16 + (maxDepth + 1) * DX);
    s.setAttribute("height", 8 + row * DY);
    box.textContent = "";
    box.appendChild(s);
    $("g-count").textContent = (count - 1) + " shown";
    var again = refocus && box.querySelector(refocus);
    if (again) again.focus();
  }
  function visible() { return !$("graph-view").hidden; }
  // fits says whether the whole graph (every node unfolded) fits the screen: no wider
  // than the page's columns and no taller than the window. A tree that has no objects
  // yet, or too many to take in at a glance, opens as the list.
  function fits() {
    var nodes = read(document.querySelector("#tree ul.tree")), rows = 1, depth = 0;
    (function walk(list, d) {
      list.forEach(function (n) { rows++; depth = Math.max(depth, d); walk(n.children, d + 1); });
    })(nodes, 1);
    var width = 16 + (depth + 1) * DX, height = 8 + rows * DY;
    return nodes.length > 0 && width <= document.querySelector(".columns").clientWidth && height <= window.innerHeight;
  }
  // setView shows the graph or the list; a person's choice is kept in the address
  // (?view=graph|list), so that a reload or a shared link opens the same view.
  function setView(graph, chosen) {
    if (chosen) {
      var u = new URL(location.href);
      u.searchParams.set("view", graph ? "graph" : "list");
      history.replaceState(null, "", u);
    }
    $("graph-view").hidden = !graph;
    $("tree").hidden = graph;
    // The graph takes the page's width; the object panel goes below it.
    document.querySelector(".tree-col").classList.toggle("graph-on", graph);
    $("view-graph").setAttribute("aria-pressed", graph ? "true" : "false");
    $("view-list").setAttribute("aria-pressed", graph ? "false" : "true");
    if (graph) draw();
  }
  $("view-graph").addEventListener("click", function () { setView(true, true); });
  $("view-list").addEventListener("click", function () { setView(false, true); });
  ["g-kind", "g-health", "g-drift"].forEach(function (id) { $(id).addEventListener("input", draw); });
  function activate(e) {
    var fold = e.target.closest("[data-fold]");
    if (fold) { folded[fold.dataset.fold] = !folded[fold.dataset.fold]; draw(); return true; }
    var g = e.target.closest("g.gnode[data-id]");
    if (g && g.dataset.id) { window.gitsyncSelect(g.dataset.id); return true; }
    return false;
  }
  $("graph").addEventListener("click", activate);
  $("graph").addEventListener("keydown", function (e) {
    if ((e.key === "Enter" || e.key === " ") && activate(e)) e.preventDefault();
  });
  document.addEventListener("gitsync:updated", function () { if (visible()) draw(); });
  document.addEventListener("gitsync:selected", function () { if (visible()) draw(); });
  // The graph is the default where it fits the screen; ?view= says otherwise.
  var asked = new URL(location.href).searchParams.get("view");
  setView(asked === "graph" || (asked !== "list" && fits()), false);
})();
