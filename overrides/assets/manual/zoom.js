// Figures that zoom, offline: a click on a figure shows its SVG full size over the page; a click or Escape
// closes it. Without JavaScript the same link opens the SVG itself. Event delegation, so pages loaded
// later need no set-up.
(function () {
  "use strict";
  var overlay = null;

  function close() {
    if (overlay) {
      overlay.remove();
      overlay = null;
    }
  }

  function open(link) {
    close();
    var image = link.querySelector("img");
    var full = document.createElement("img");
    full.src = link.getAttribute("href");
    full.alt = image ? image.alt : "";
    overlay = document.createElement("div");
    overlay.className = "manual-zoom-overlay";
    overlay.setAttribute("role", "dialog");
    overlay.setAttribute("aria-label", link.title || "Figure, full size");
    overlay.appendChild(full);
    overlay.addEventListener("click", close);
    document.body.appendChild(overlay);
  }

  document.addEventListener("click", function (event) {
    var link = event.target.closest ? event.target.closest("a.manual-zoom") : null;
    if (!link || event.ctrlKey || event.metaKey || event.shiftKey) {
      return;
    }
    event.preventDefault();
    open(link);
  });
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape") {
      close();
    }
  });
})();
