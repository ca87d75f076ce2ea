/* hprof heap --html: draws the page from the JSON in #heap-data (heap_html.c).
 * Tree rows: [class, id, shallow, retained, first child row or -1, children
 * shown, more count, more retained, children]. The URL's hash may ask for
 * "expand" (open the largest object under the roots and its largest child,
 * for tests and links) and "sort=count|shallow|retained|name" (the
 * histogram's order). */
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("heap-data").textContent);
  var total = data.reachable_bytes || 1;
  function fmt(n) { return Number(n).toLocaleString("en-US"); }
  function pct(n) { return (100 * n / total).toFixed(1) + "%"; }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  document.getElementById("summary").textContent =
    fmt(data.objects) + " objects (instances and arrays), " + fmt(data.bytes) + " bytes; " +
    fmt(data.reachable) + " objects and classes reachable from " + fmt(data.roots) + " GC roots, " +
    fmt(data.reachable_bytes) + " bytes.";

  /* suspects */
  function stepText(s) {
    if (s.root !== undefined)
      return "root: " + s.root + (s.thread ? ", thread \"" + s.thread + "\"" : "") + (s.frame ? ", " + s.frame : "");
    if (s.index !== undefined) return "-> " + s["class"] + "[" + s.index + "]";
    if (s["static"] !== undefined) return "-> " + s["class"] + "." + s["static"] + " (static)";
    return "-> " + s["class"] + "." + s.field;
  }
  var sus = document.getElementById("suspects");
  if (data.suspects.length === 0)
    sus.appendChild(el("p", "note", "None: no object, and no class's instances held by no single object, " +
                       "retain " + data.suspect_percent + "% of the reachable heap."));
  data.suspects.forEach(function (s, i) {
    var d = el("div", "suspect");
    d.id = "suspect-" + (i + 1);
    d.appendChild(el("div", "sentence", (i + 1) + ". " + s.sentence));
    var p = el("div", "path");
    s.path.forEach(function (step) { p.appendChild(el("div", "", stepText(step))); });
    d.appendChild(p);
    sus.appendChild(d);
  });

  /* the dominator tree */
  var tree = data.tree, rowsDrawn = 0;
  document.getElementById("tree-note").textContent =
    "Each object retains what it dominates (freed with it); children largest first, at most " +
    data.child_limit + " of one object (the rest summed), at most " + fmt(data.node_limit) +
    " objects and " + data.depth_limit + " levels in the page. Click a row's arrow to open it.";
  function rowEl(r) {
    var t = tree[r], row = el("div", "row");
    row.dataset.row = r;
    var tog = el("span", "toggle", t[4] >= 0 ? "\u25B8" : (t[8] > 0 ? "\u00B7" : " "));
    var name = el("span", "name");
    var bar = el("span", "bar");
    bar.style.width = Math.max(1, Math.round(60 * t[3] / total)) + "px";
    name.appendChild(bar);
    name.appendChild(document.createTextNode(t[0] + (t[1] ? " " + t[1] : "")));
    row.appendChild(tog);
    row.appendChild(name);
    row.appendChild(el("span", "num retained", fmt(t[3])));
    row.appendChild(el("span", "num", pct(t[3])));
    row.appendChild(el("span", "num", fmt(t[2])));
    var box = el("div");
    box.appendChild(row);
    if (t[4] >= 0 || t[8] > 0)
      tog.addEventListener("click", function () { toggle(box, r, tog); });
    rowsDrawn++;
    return box;
  }
  function toggle(box, r, tog) {
    var t = tree[r], kids = box.querySelector(":scope > .children");
    if (kids) {
      kids.remove();
      tog.textContent = t[4] >= 0 ? "\u25B8" : "\u00B7";
      return null;
    }
    kids = el("div", "children");
    if (t[4] < 0) {
      kids.appendChild(el("div", "absent", fmt(t[8]) + " children, not in this page (it holds the " +
                          fmt(data.node_limit) + " largest objects, " + data.depth_limit + " levels deep at most)"));
    } else {
      for (var i = 0; i < t[5]; i++) kids.appendChild(rowEl(t[4] + i));
      if (t[6] > 0)
        kids.appendChild(el("div", "more", fmt(t[6]) + " more, retaining " + fmt(t[7]) + " bytes (" + pct(t[7]) + ")"));
    }
    box.appendChild(kids);
    tog.textContent = "\u25BE";
    return kids;
  }
  var head = el("div", "row");
  ["", "object (class, id)", "retained", "% reachable", "shallow"].forEach(function (h, i) {
    head.appendChild(el("span", i === 0 ? "toggle" : i === 1 ? "name" : "num", h));
  });
  var treeBox = document.getElementById("tree");
  treeBox.appendChild(head);
  var rootBox = rowEl(0);
  treeBox.appendChild(rootBox);
  toggle(rootBox, 0, rootBox.querySelector(".toggle"));

  /* the histogram */
  var classes = data.classes.slice(), table = document.getElementById("classes");
  var cols = [["retained", 3], ["shallow", 2], ["count", 1], ["name", 0]];
  document.getElementById("classes-note").textContent = (data.class_count > classes.length ?
    "The " + fmt(classes.length) + " of " + fmt(data.class_count) + " classes retaining most. " : "") +
    "A class retains what its instances retain together. Click a column to sort.";
  function drawClasses(by) {
    var col = cols.filter(function (c) { return c[0] === by; })[0] || cols[0];
    classes.sort(function (a, b) {
      return col[1] === 0 ? (a[0] < b[0] ? -1 : a[0] > b[0]) : b[col[1]] - a[col[1]];
    });
    table.textContent = "";
    var tr = el("tr");
    cols.forEach(function (c) {
      var th = el("th", (c[1] === 0 ? "text " : "") + (c === col ? "sorted" : ""), c[0]);
      th.dataset.sort = c[0];
      th.addEventListener("click", function () { drawClasses(c[0]); });
      tr.appendChild(th);
    });
    table.appendChild(tr);
    classes.forEach(function (k) {
      var row = el("tr");
      row.appendChild(el("td", "num", fmt(k[3])));
      row.appendChild(el("td", "num", fmt(k[2])));
      row.appendChild(el("td", "num", fmt(k[1])));
      row.appendChild(el("td", "text", k[0]));
      table.appendChild(row);
    });
    table.dataset.sort = col[0];
  }
  var hash = {};
  location.hash.replace(/^#/, "").split("&").forEach(function (kv) {
    var p = kv.split("=");
    if (p[0]) hash[p[0]] = p.length > 1 ? decodeURIComponent(p[1]) : "";
  });
  drawClasses(hash.sort || "retained");
  if ("expand" in hash) {
    /* the largest object under the roots, then down its largest child while there is one */
    var depth = parseInt(hash.expand, 10) || 2, box = rootBox;
    for (var i = 0; i < depth; i++) {
      var first = box.querySelector(":scope > .children > div");
      if (!first || !first.querySelector(".row")) break;
      var r = +first.querySelector(".row").dataset.row;
      if (tree[r][4] < 0) break;
      toggle(first, r, first.querySelector(".toggle"));
      box = first;
    }
  }
  var status = document.getElementById("status");
  status.dataset.state = "ok";
  status.textContent = "Drew " + rowsDrawn + " rows of the dominator tree (" + tree.length + " in the page), " +
    classes.length + " classes, " + data.suspects.length + " suspects.";
})();
