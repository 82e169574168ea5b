// Keyboard shortcuts for the judging page: each label button and the undo button carry data-key.
// A form is submitted once (buttons are disabled after the first submission).
(function () {
  "use strict";
  function submitted(form) {
    if (form.dataset.sent) { return false; }
    form.dataset.sent = "1";
    return true;
  }
  document.addEventListener("submit", function (event) {
    if (!submitted(event.target)) { event.preventDefault(); }
  });
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) { return; }
    var t = event.target;
    if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT")) { return; }
    var buttons = document.querySelectorAll("button[data-key]");
    for (var i = 0; i < buttons.length; i++) {
      if (buttons[i].dataset.key === event.key) {
        event.preventDefault();
        buttons[i].click();
        return;
      }
    }
  });
}());
