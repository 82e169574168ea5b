// Keyboard shortcuts for the judging page: each label button and the undo button carry data-key
// (letters in either case: u and U both undo).  A form is submitted once; keys pressed while a
// submission is on its way are queued (sessionStorage) and replayed, in order, on the page that
// follows -- so "1" then "u" judges, then undoes that judgment, and "u" never overtakes the label.
// A waiting page asks /api/next every 700 ms and shows the document as soon as one frees; the
// organiser's page reloads itself every 30 s unless a field is being filled in.
(function () {
  "use strict";
  var QUEUE = "pn-keys";
  var sent = false;
  function queued() {
    try { return JSON.parse(window.sessionStorage.getItem(QUEUE) || "[]"); } catch (e) { return []; }
  }
  function store(keys) {
    try { window.sessionStorage.setItem(QUEUE, JSON.stringify(keys.slice(0, 8))); } catch (e) { /* private mode */ }
  }
  function button(key) {
    var buttons = document.querySelectorAll("button[data-key]");
    for (var i = 0; i < buttons.length; i++) {
      var k = buttons[i].dataset.key;
      if (k === key || (k.length === 1 && /[a-z]/i.test(k) && k.toLowerCase() === key.toLowerCase())) {
        return buttons[i];
      }
    }
    return null;
  }
  document.addEventListener("submit", function (event) {
    if (sent) { event.preventDefault(); return; }
    sent = true;
  });
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) { return; }
    var t = event.target;
    if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT")) { return; }
    if (event.key.length !== 1) { return; }
    if (sent) {                       // a judgment or an undo is on its way: this key waits for the next page
      if (document.querySelector("button[data-key]")) {
        event.preventDefault();
        store(queued().concat([event.key]));
      }
      return;
    }
    var b = button(event.key);
    if (b) { event.preventDefault(); b.click(); }
  });
  function replay() {
    var keys = queued();
    if (!keys.length) { return; }
    var key = keys.shift();
    store(keys);
    var b = button(key);
    if (b) { b.click(); } else { store([]); }      // a key the new page has no button for ends the queue
  }
  function poll() {
    var req = new XMLHttpRequest();
    req.open("GET", "/api/next");
    req.onload = function () {
      var state = null;
      try { state = JSON.parse(req.responseText).state; } catch (e) { state = null; }
      if (req.status === 200 && state === "wait") { window.setTimeout(poll, 700); } else { window.location.reload(); }
    };
    req.onerror = function () { window.setTimeout(poll, 3000); };
    req.send();
  }
  function editing() {
    var fields = document.querySelectorAll("input:not([type=hidden]), select, textarea");
    for (var i = 0; i < fields.length; i++) {
      if (fields[i] === document.activeElement || (fields[i].tagName === "INPUT" && fields[i].value)) { return true; }
    }
    return false;
  }
  document.addEventListener("DOMContentLoaded", function () {
    var body = document.body.dataset;
    if (body.poll) { window.setTimeout(poll, 700); }
    if (body.refresh) {
      window.setInterval(function () { if (!editing() && !sent) { window.location.reload(); } },
                         1000 * Number(body.refresh));
    }
    replay();
  });
}());
