/* flamegraph.js: draws the flame graphs of a page written by
 * flamegraph_writer.c, from HPROF_FLAME_DATA (one entry per section, null for
 * a section without a graph). Canvas, not one DOM node per frame, so that
 * 100,000 stacks stay fast; names reach the DOM through textContent only.
 *
 * A section's tree is a string of numbers, per node in depth-first order
 * (children after their parent): a head `code * 4 + flags`, then the name
 * index when code is 0 (code k >= 1: the k-th name the parent's name was
 * already seen calling, in the order first seen), the value unless flag 1
 * (it is what is left of the parent's value after the earlier siblings), the
 * baseline value in differential sections, the number of children unless
 * flag 2 (exactly one). A number is base-32 digits, most significant first:
 * 'w'..'_' are digits with more to follow, '0'..'v' the last digit. */
(function () {
  'use strict';
  /* Rows of 16 px (12 px text); a shallow graph (stacks cut at depth=, a
   * few frames deep) gets rows of 26 px (14 px text), so it is not a strip. */
  var ROW = 16, FONT = '12px monospace', SHALLOW = 12, SHALLOW_ROW = 26, SHALLOW_FONT = '14px monospace';
  var MIN_WIDTH = 0.4, PATH_MAX = 1024;
  var started = performance.now();
  var tip = document.getElementById('fg-tip');
  var errors = document.getElementById('fg-errors');
  var status = document.getElementById('fg-status');

  var LAST = '0123456789abcdefghijklmnopqrstuv', MORE = 'wxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_';
  var digitOf = new Int8Array(128).fill(-1);
  for (var k = 0; k < 32; k++) {
    digitOf[LAST.charCodeAt(k)] = k;
    digitOf[MORE.charCodeAt(k)] = 32 + k;
  }

  /* Every number of a tree string, in one tight loop. */
  function readNumbers(s) {
    var out = new Float64Array(s.length), count = 0, v = 0;
    for (var i = 0; i < s.length; i++) {
      var c = digitOf[s.charCodeAt(i) & 127];
      if (c < 0) throw new Error('bad flame graph data at offset ' + i);
      if (c < 32) {
        out[count++] = v * 32 + c;
        v = 0;
      } else {
        v = v * 32 + (c - 32);
      }
    }
    if (v !== 0 || (s.length && digitOf[s.charCodeAt(s.length - 1) & 127] >= 32))
      throw new Error('flame graph data ends inside a number');
    return out.subarray(0, count);
  }

  function decode(d) {
    var nums = readNumbers(d.tree), k = 0, n = d.n, total = nums.length;
    var name = new Int32Array(n), val = new Float64Array(n), base = d.diff ? new Float64Array(n) : null;
    var x = new Float64Array(n), depth = new Uint16Array(n), end = new Int32Array(n), parent = new Int32Array(n);
    var maxDepth = 0;
    /* The open nodes on the path: children still to read, where the next one starts. */
    var openNode = new Int32Array(PATH_MAX), openLeft = new Int32Array(PATH_MAX), openX = new Float64Array(PATH_MAX);
    var top = -1;
    var callees = d.names.map(function () { return null; });   /* by caller name: names it calls */
    for (var i = 0; i < n; i++) {
      if (k + 2 > total) throw new Error('flame graph data ends early');
      var p = top >= 0 ? openNode[top] : -1;
      var head = nums[k++], code = Math.floor(head / 4), flags = head % 4;
      var nm = code === 0 ? nums[k++] : p >= 0 && callees[name[p]] ? callees[name[p]][code - 1] : undefined;
      if (nm === undefined || nm >= d.names.length) throw new Error('bad name in flame graph data, node ' + i);
      if (code === 0 && p >= 0) (callees[name[p]] = callees[name[p]] || []).push(nm);
      name[i] = nm;
      val[i] = flags & 1 ? val[p] - (openX[top] - x[p]) : nums[k++];
      if (base) base[i] = nums[k++];
      var kids = flags & 2 ? 1 : nums[k++];
      if (p >= 0) {
        parent[i] = p;
        depth[i] = depth[p] + 1;
        x[i] = openX[top];
        openX[top] += val[i];
        openLeft[top]--;
      } else {
        parent[i] = -1;
      }
      if (depth[i] > maxDepth) maxDepth = depth[i];
      if (kids > 0) {
        if (++top === PATH_MAX) throw new Error('flame graph deeper than ' + PATH_MAX);
        openNode[top] = i; openLeft[top] = kids; openX[top] = x[i];
        continue;
      }
      end[i] = i + 1;
      while (top >= 0 && openLeft[top] === 0) end[openNode[top--]] = i + 1;
    }
    if (k !== total || top >= 0)
      throw new Error('flame graph data does not match its node count');
    return { n: n, names: d.names, name: name, val: val, base: base, x: x, depth: depth, end: end,
             parent: parent, maxDepth: maxDepth };
  }

  function hashOf(s) {
    var h = 2166136261;
    for (var i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
    return h >>> 0;
  }

  /* How a Java frame ran, from the suffix the agent puts after its name
   * (async-profiler's convention): shown in words in the tooltip, as a
   * colour in the box, never as part of the label. */
  var RUNS = { '_[0]': 'interpreted', '_[j]': 'compiled', '_[i]': 'inlined' };

  function runOf(name) {
    return name.length > 4 ? RUNS[name.slice(-4)] : undefined;
  }

  function shownName(name) {
    return runOf(name) ? name.slice(0, -4) : name;
  }

  /* Colours by the kind of code, stable per name, as async-profiler and
   * flamegraph.pl's java palette draw them: Java methods ("pkg.Class.m")
   * green (compiled), aqua when inlined, yellow-green when interpreted;
   * C++ (the JVM: "G1ParScanThreadState::trim_queue") yellow, other native
   * functions (libc, JNI: "memmove") red-orange, kernel frames ("..._[k]")
   * orange; pseudo frames ("[unwalkable]...", "[state]...") grey. */
  function frameKind(name) {
    var run = runOf(name);
    if (run) return run;
    if (name.charAt(0) === '[') return 'pseudo';
    if (/_\[k\]$/.test(name)) return 'kernel';
    if (name.indexOf('::') >= 0) return 'cpp';
    if (name.indexOf('.') > 0) return 'java';
    return 'native';
  }

  function warmColour(name) {
    var kind = frameKind(name);
    if (kind === 'pseudo') return 'rgb(190,190,190)';
    var h = hashOf(shownName(name)), a = (h & 31) / 31, b = (h >>> 5 & 127) / 127, c = (h >>> 12 & 31) / 31;
    if (kind === 'java' || kind === 'compiled') return 'rgb(' + (50 + a * 60 | 0) + ',' + (170 + b * 70 | 0) + ',' + (50 + c * 50 | 0) + ')';
    if (kind === 'inlined') return 'rgb(' + (40 + a * 50 | 0) + ',' + (190 + b * 50 | 0) + ',' + (190 + c * 50 | 0) + ')';
    if (kind === 'interpreted') return 'rgb(' + (160 + a * 50 | 0) + ',' + (215 + b * 35 | 0) + ',' + (60 + c * 50 | 0) + ')';
    if (kind === 'cpp') return 'rgb(' + (200 + a * 30 | 0) + ',' + (200 + b * 30 | 0) + ',' + (40 + c * 60 | 0) + ')';
    if (kind === 'kernel') return 'rgb(' + (230 + a * 25 | 0) + ',' + (140 + b * 40 | 0) + ',' + (c * 40 | 0) + ')';
    return 'rgb(' + (205 + a * 50 | 0) + ',' + (80 + b * 60 | 0) + ',' + (c * 55 | 0) + ')';
  }

  function grouped(v) { return Math.round(v).toLocaleString('en-US'); }

  function formatValue(d, v) {
    if (d.unit === 'nanoseconds') {
      if (v >= 1e9) return (v / 1e9).toFixed(2) + ' s';
      if (v >= 1e6) return (v / 1e6).toFixed(2) + ' ms';
      if (v >= 1e3) return (v / 1e3).toFixed(1) + ' \u00b5s';
      return grouped(v) + ' ns';
    }
    if (d.unit === 'bytes') {
      if (v >= 1073741824) return (v / 1073741824).toFixed(2) + ' GiB';
      if (v >= 1048576) return (v / 1048576).toFixed(2) + ' MiB';
      if (v >= 1024) return (v / 1024).toFixed(1) + ' KiB';
      return grouped(v) + ' bytes';
    }
    return grouped(v) + ' ' + (d.unit === 'count' ? d.type : d.unit);
  }

  function percent(part, whole) { return whole > 0 ? (100 * part / whole).toFixed(2) + '%' : '-'; }

  /* The inverted tree of t (a decoded tree): the callers of each frame's
   * self value, leaf frames at the root's level, as flame graph tools draw
   * "icicle" or "callers" views. Children in name order, like the writer's. */
  function invert(t) {
    var self = new Float64Array(t.n), i;
    for (i = 0; i < t.n; i++) self[i] = t.val[i];
    for (i = 1; i < t.n; i++) self[t.parent[i]] -= t.val[i];
    /* A trie of the reversed paths: kids[node] maps name -> node. */
    var tname = [-1], tval = [0], kids = [new Map()];
    for (i = 1; i < t.n; i++) {
      if (self[i] <= 0) continue;
      tval[0] += self[i];
      var node = 0;
      for (var a = i; a > 0; a = t.parent[a]) {
        var nm = t.name[a], next = kids[node].get(nm);
        if (next === undefined) {
          next = tname.length;
          tname.push(nm); tval.push(0); kids.push(new Map());
          kids[node].set(nm, next);
        }
        tval[next] += self[i];
        node = next;
      }
    }
    var n = tname.length, out = { n: n, names: t.names, name: new Int32Array(n), val: new Float64Array(n),
      base: null, x: new Float64Array(n), depth: new Uint16Array(n), end: new Int32Array(n),
      parent: new Int32Array(n), maxDepth: 0 };
    /* Depth first, children by name, into the decoded layout. */
    var k = 0;
    function place(node, parentAt, x, depth) {
      var at = k++;
      out.name[at] = node === 0 ? t.name[0] : tname[node];
      out.val[at] = tval[node];
      out.x[at] = x;
      out.depth[at] = depth;
      out.parent[at] = parentAt;
      if (depth > out.maxDepth) out.maxDepth = depth;
      var order = Array.from(kids[node].values());
      order.sort(function (p, q) { var a = t.names[tname[p]], b = t.names[tname[q]]; return a < b ? -1 : a > b ? 1 : 0; });
      for (var c = 0; c < order.length; c++) {
        place(order[c], at, x, depth + 1);
        x += tval[order[c]];
      }
      out.end[at] = k;
    }
    place(0, -1, 0, 0);
    return out;
  }

  function Graph(section, data) {
    this.data = data;
    this.plain = decode(data);
    this.byThread = data.threads ? decode({ names: data.threads.names, tree: data.threads.tree,
                                            n: data.threads.n, diff: 0 }) : null;
    this.t = this.plain;
    this.zoom = 0;
    this.matches = null;
    this.searched = '';
    this.colourCache = new Map();
    this.holder = section.querySelector('.fg-graph');
    this.canvas = this.holder.querySelector('canvas');
    this.matchLabel = section.querySelector('.fg-match');
    this.maxDelta = data.diff ? this.largestDelta() : 0;
    var g = this;
    section.querySelector('.fg-search').addEventListener('input', function () { g.search(this.value); });
    section.querySelector('.fg-reset').addEventListener('click', function () { g.zoomTo(0); });
    var invert = section.querySelector('.fg-invert'), byThread = section.querySelector('.fg-by-thread');
    if (data.diff) invert.parentNode.hidden = true;      /* a callers view of a diff: not drawn */
    if (!this.byThread) byThread.parentNode.hidden = true;
    function choose() { g.choose(byThread.checked, invert.checked); }
    invert.addEventListener('change', choose);
    byThread.addEventListener('change', choose);
    this.canvas.addEventListener('click', function (e) {
      var i = g.nodeAt(e.offsetX, e.offsetY);
      if (i >= 0) g.zoomTo(i);
    });
    this.canvas.addEventListener('mousemove', function (e) { g.showTip(e); });
    this.canvas.addEventListener('mouseleave', function () { tip.hidden = true; });
  }

  /* The view: by thread or not, inverted or not (inverted trees are made
   * when first asked for). */
  Graph.prototype.choose = function (byThread, inverted) {
    var tree = byThread && this.byThread ? this.byThread : this.plain;
    if (inverted) {
      var key = tree === this.plain ? 'plainInverted' : 'byThreadInverted';
      tree = this[key] || (this[key] = invert(tree));
    }
    this.t = tree;
    this.zoom = 0;
    this.layout();
    this.search(this.searched);
  };

  /* Differential: the share a node has now minus the share it had. */
  Graph.prototype.delta = function (i) {
    var t = this.t, d = this.data;
    return (d.total > 0 ? t.val[i] / d.total : 0) - (d.baseTotal > 0 ? t.base[i] / d.baseTotal : 0);
  };

  Graph.prototype.largestDelta = function () {
    var m = 0;
    for (var i = 1; i < this.t.n; i++) m = Math.max(m, Math.abs(this.delta(i)));
    return m;
  };

  Graph.prototype.colour = function (i) {
    if (this.matches && this.matches[i]) return 'rgb(224,64,251)';
    if (!this.data.diff) {
      var name = this.t.names[this.t.name[i]], c = this.colourCache.get(name);
      if (c === undefined) this.colourCache.set(name, c = warmColour(name));
      return c;
    }
    var d = this.delta(i), s = this.maxDelta > 0 ? Math.min(1, Math.abs(d) / this.maxDelta) : 0;
    var c = Math.round(235 - 175 * s);
    if (s < 1e-9) return 'rgb(235,235,235)';
    return d > 0 ? 'rgb(255,' + c + ',' + c + ')' : 'rgb(' + c + ',' + c + ',255)';
  };

  /* The canvas's height, set for every graph before any is drawn: the page's
   * final height decides whether a scroll bar takes some of the width. */
  Graph.prototype.layout = function () {
    this.row = this.t.maxDepth < SHALLOW ? SHALLOW_ROW : ROW;
    this.canvas.dataset.row = this.row;
    this.canvas.style.height = (this.t.maxDepth + 1) * this.row + 'px';
  };

  Graph.prototype.draw = function () {
    var t = this.t, ctx = this.canvas.getContext('2d');
    var width = this.holder.clientWidth || 1000, ratio = window.devicePixelRatio || 1;
    var height = (t.maxDepth + 1) * this.row;
    this.width = width;
    this.canvas.width = width * ratio;
    this.canvas.height = height * ratio;
    this.canvas.style.width = width + 'px';
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.font = this.row === SHALLOW_ROW ? SHALLOW_FONT : FONT;
    ctx.textBaseline = 'middle';
    this.charWidth = ctx.measureText('MMMMMMMMMM').width / 10;
    for (var a = t.parent[this.zoom]; a >= 0; a = t.parent[a]) this.box(ctx, a, 0, width);
    var z = this.zoom, scale = t.val[z] > 0 ? width / t.val[z] : 0, x0 = t.x[z];
    for (var i = z; i < t.end[z];) {
      var w = t.val[i] * scale;
      if (w < MIN_WIDTH) { i = t.end[i]; continue; }   /* its children are narrower still */
      this.box(ctx, i, (t.x[i] - x0) * scale, w);
      i++;
    }
    this.drawn = true;
  };

  Graph.prototype.box = function (ctx, i, x, w) {
    var t = this.t, row = this.row, y = t.depth[i] * row;
    ctx.fillStyle = this.colour(i);
    ctx.fillRect(x, y, w > 2 ? w - 1 : w, row - 1);
    var room = Math.floor((w - 6) / this.charWidth);
    if (room < 3) return;
    ctx.fillStyle = '#000';
    ctx.fillText(this.label(shownName(t.names[t.name[i]]), room), x + 3, y + row / 2);
  };

  /* A name cut to `room` characters: the package goes first ("String.indexOf"
   * says more than "java.lang.S.."), then the end. */
  Graph.prototype.label = function (name, room) {
    if (name.length <= room) return name;
    var method = name.lastIndexOf('.'), cls = method > 0 ? name.lastIndexOf('.', method - 1) : -1;
    var short = cls >= 0 ? name.slice(cls + 1) : name;
    return short.length <= room ? short : short.slice(0, room - 2) + '..';
  };

  /* The node under (px, py): an ancestor of the zoomed node, or one inside it. */
  Graph.prototype.nodeAt = function (px, py) {
    var t = this.t, z = this.zoom, row = Math.floor(py / this.row), i = z;
    if (row < t.depth[z]) {
      while (t.depth[i] > row) i = t.parent[i];
      return i;
    }
    var v = t.x[z] + px * t.val[z] / this.width;
    while (t.depth[i] < row) {
      var next = -1;
      for (var c = i + 1; c < t.end[i]; c = t.end[c])
        if (v >= t.x[c] && v < t.x[c] + t.val[c]) { next = c; break; }
      if (next < 0) return -1;
      i = next;
    }
    return i;
  };

  Graph.prototype.zoomTo = function (i) {
    this.zoom = i;
    this.draw();
  };

  Graph.prototype.search = function (text) {
    var t = this.t, d = this.data;
    this.searched = text;
    this.matches = null;
    this.matchLabel.textContent = '';
    if (text) {
      var named = t.names.map(function (s) { return s.indexOf(text) >= 0; });
      var m = new Uint8Array(t.n), matched = 0, coveredTo = 0;
      for (var i = 0; i < t.n; i++) {
        if (!named[t.name[i]]) continue;
        m[i] = 1;
        if (i >= coveredTo) { matched += t.val[i]; coveredTo = t.end[i]; }   /* not counted twice when nested */
      }
      this.matches = m;
      this.matchLabel.textContent = 'matched ' + percent(matched, d.total) + ' (' + formatValue(d, matched) + ')';
    }
    this.draw();
  };

  Graph.prototype.showTip = function (e) {
    var i = this.nodeAt(e.offsetX, e.offsetY);
    if (i < 0) { tip.hidden = true; return; }
    var t = this.t, d = this.data, v = t.val[i];
    var name = t.names[t.name[i]], run = runOf(name);
    var lines = [shownName(name) + (run ? '  (' + run + ')' : ''),
                 formatValue(d, v) + '  ' + percent(v, d.total) + ' of total' +
                 (this.zoom ? ', ' + percent(v, t.val[this.zoom]) + ' of ' + shownName(t.names[t.name[this.zoom]]) : '')];
    if (d.diff) {
      var b = t.base[i], sign = v >= b ? '+' : '-';
      lines.push('before ' + formatValue(d, b) + ' (' + percent(b, d.baseTotal) + ')  after ' +
                 formatValue(d, v) + ' (' + percent(v, d.total) + ')');
      lines.push('delta ' + sign + formatValue(d, Math.abs(v - b)) + ' (' +
                 (this.delta(i) >= 0 ? '+' : '') + (100 * this.delta(i)).toFixed(2) + ' points of the total)');
    }
    tip.textContent = lines.join('\n');
    tip.hidden = false;
    var x = e.clientX + 14, y = e.clientY + 14;
    if (x + tip.offsetWidth > window.innerWidth) x = Math.max(0, e.clientX - tip.offsetWidth - 14);
    if (y + tip.offsetHeight > window.innerHeight) y = Math.max(0, e.clientY - tip.offsetHeight - 14);
    tip.style.left = x + 'px';
    tip.style.top = y + 'px';
  };

  function reportError(what, err) {
    errors.textContent += what + ': ' + (err && err.message ? err.message : String(err)) + '\n';
  }

  var graphs = [], frames = 0, decoded = 0;
  var sections = document.querySelectorAll('section.fg-section');
  for (var s = 0; s < sections.length; s++) {
    if (!HPROF_FLAME_DATA[s]) continue;
    try {
      var g = new Graph(sections[s], HPROF_FLAME_DATA[s]);
      g.layout();
      graphs.push(g);
    } catch (err) {
      reportError('section ' + (s + 1), err);
    }
  }
  decoded = performance.now();
  graphs.forEach(function (g, i) {
    try {
      g.draw();
      frames += g.t.n;
    } catch (err) {
      reportError('graph ' + (i + 1), err);
    }
  });
  /* Redrawn when a graph's width changes (window resized, scroll bar). */
  var observer = new ResizeObserver(function () {
    graphs.forEach(function (g) { if (g.holder.clientWidth !== g.width) g.draw(); });
  });
  graphs.forEach(function (g) { observer.observe(g.holder); });
  var ms = performance.now() - started;
  status.dataset.state = errors.textContent ? 'error' : 'ok';
  status.dataset.renderMs = ms.toFixed(1);
  status.dataset.decodeMs = (decoded - started).toFixed(1);
  status.dataset.sinceNavigationMs = performance.now().toFixed(1);
  status.textContent = 'Drew ' + graphs.length + ' flame graph' + (graphs.length === 1 ? '' : 's') + ' (' +
                       grouped(frames) + ' frames) in ' + ms.toFixed(0) + ' ms.';
})();
