/* Appended by tests/test_writers.py to a copy of the known profile's flame
 * graph page: hovers, searches and clicks like a person would, and writes
 * what the page showed, as JSON, into a new pre element (id "probe") for the test to read. */
(function () {
  var tip = document.getElementById('fg-tip'), result = {};
  function canvasOf(section) { return document.getElementById('fg-section-' + section).querySelector('canvas'); }
  function at(section, fraction, row, type) {
    var c = canvasOf(section), r = c.getBoundingClientRect(), h = Number(c.dataset.row);
    c.dispatchEvent(new MouseEvent(type, { clientX: r.left + fraction * r.width, clientY: r.top + row * h + h / 2,
                                           bubbles: true }));
    return tip.hidden ? '' : tip.textContent;
  }
  try {
    result.main = at(1, 0.01, 1, 'mousemove');
    result.gc = at(1, 0.995, 1, 'mousemove');
    result.init = at(1, 0.9, 3, 'mousemove');       /* children: lambda 75, arraycopy 7, <init> 15 */
    result.cpu_main = at(2, 0.01, 1, 'mousemove');
    result.diff_lambda = at(3, 0.01, 3, 'mousemove');
    var search = document.querySelector('#fg-section-1 .fg-search');
    search.value = 'HashMap';
    search.dispatchEvent(new Event('input'));
    result.search = document.querySelector('#fg-section-1 .fg-match').textContent;
    at(1, 0.01, 3, 'click');                         /* zoom into Demo.lambda$run$0 */
    result.zoomed_get = at(1, 0.5, 4, 'mousemove');
    result.injected_elements = String(document.getElementsByTagName('init').length);
    /* A shallow graph (the known profile is 5 frames deep) has tall rows. */
    result.row_height = canvasOf(1).dataset.row + ' ' + canvasOf(1).style.height;
    /* The inverted view: the leaves (self time) on the first row. */
    var invert = document.querySelector('#fg-section-1 .fg-invert');
    invert.checked = true;
    invert.dispatchEvent(new Event('change'));
    result.inverted_last_leaf = at(1, 0.995, 1, 'mousemove');
    result.inverted_first_leaf = at(1, 0.005, 1, 'mousemove');
    result.inverted_caller = at(1, 0.995, 2, 'mousemove');
    /* By thread, not inverted: the threads on the first row. */
    var byThread = document.querySelector('#fg-section-1 .fg-by-thread');
    invert.checked = false;
    byThread.checked = true;
    byThread.dispatchEvent(new Event('change'));
    result.by_thread_first = at(1, 0.005, 1, 'mousemove');
    result.by_thread_last = at(1, 0.995, 1, 'mousemove');
    result.by_thread_under = at(1, 0.995, 2, 'mousemove');
    result.by_thread_hidden_without_threads = String(document.querySelector('#fg-section-3 .fg-by-thread').parentNode.hidden);
  } catch (e) {
    result.error = String(e);
  }
  var pre = document.createElement('pre');
  pre.id = 'probe';
  pre.textContent = JSON.stringify(result);
  document.body.appendChild(pre);
})();
