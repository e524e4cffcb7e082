// Progressive enhancement only: every page works without this file.
// It adds a Copy button beside read-only snippets.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("button[data-copy]").forEach(function (button) {
    var target = document.getElementById(button.getAttribute("data-copy"));
    if (!target || !navigator.clipboard) { return; }
    button.hidden = false;
    button.addEventListener("click", function () {
      navigator.clipboard.writeText(target.value).then(function () {
        button.textContent = "Copied";
        setTimeout(function () { button.textContent = "Copy"; }, 2000);
      }, function () {
        target.select();
      });
    });
  });
});
