// Figures that zoom, offline: a click (or Enter) on a figure opens it in a modal dialog that fits the figure
// to the screen, with its number and caption and a visible close button. Focus moves to the close button;
// Escape, the button or a click outside the figure closes it, and focus returns to the figure's link.
// Without JavaScript the same link opens the SVG itself. Event delegation, so pages loaded later need no
// set-up.
(function () {
  "use strict";
  var dialog = null;
  var opener = null;

  function close() {
    if (!dialog) {
      return;
    }
    var closing = dialog;
    dialog = null;
    if (closing.open) {
      closing.close();
    }
    closing.remove();
    document.documentElement.classList.remove("manual-zoom-open");
    if (opener && document.contains(opener)) {
      opener.focus();
    }
    opener = null;
  }

  function captionOf(link) {
    var figure = link.closest("figure");
    var caption = figure ? figure.querySelector("figcaption") : null;
    if (!caption) {
      return { number: link.title || "Figure", text: "" };
    }
    var strong = caption.querySelector("strong");
    var number = strong ? strong.textContent.trim() : "";
    var text = "";
    caption.childNodes.forEach(function (node) {
      if (node === strong || (node.classList && node.classList.contains("manual-data"))) {
        return;
      }
      if (node.classList && node.classList.contains("manual-source")) {
        text = text.trim() + " · " + node.textContent;  // what the runs are: measured or synthesized
        return;
      }
      text += node.textContent;
    });
    return { number: number.replace(/\.$/, ""), text: text.trim() };
  }

  function element(tag, className, text) {
    var node = document.createElement(tag);
    if (className) {
      node.className = className;
    }
    if (text) {
      node.textContent = text;
    }
    return node;
  }

  function open(link) {
    close();
    opener = link;
    // The image the page shows: the figure in the reader's colour scheme (the other one is not displayed).
    var image = Array.prototype.find.call(link.querySelectorAll("img"), function (img) {
      return img.getClientRects().length > 0;
    }) || link.querySelector("img");
    var caption = captionOf(link);
    var id = "manual-zoom-title";

    dialog = element("dialog", "manual-zoom-dialog");
    dialog.setAttribute("aria-labelledby", id);
    var bar = element("div", "manual-zoom-dialog__bar");
    var title = element("p", "manual-zoom-dialog__title");
    title.id = id;
    title.appendChild(element("strong", "", caption.number + "."));
    if (caption.text) {
      title.appendChild(document.createTextNode(" " + caption.text));
    }
    var button = element("button", "manual-zoom-dialog__close", "Close");
    button.type = "button";
    button.setAttribute("aria-label", "Close " + caption.number);
    button.addEventListener("click", close);
    bar.appendChild(title);
    bar.appendChild(button);

    var frame = element("div", "manual-zoom-dialog__frame");
    var full = document.createElement("img");
    full.src = (image && image.getAttribute("data-manual-full")) || link.getAttribute("href");
    full.alt = image ? image.alt : "";
    var ratio = function (img) {
      if (img && img.naturalWidth > 0 && img.naturalHeight > 0) {
        frame.style.setProperty("--ratio", String(img.naturalWidth / img.naturalHeight));
      }
    };
    // Where the figure is wider than the screen (a phone held upright), the frame scrolls sideways: say so.
    var hint = element("p", "manual-zoom-dialog__hint", "Scroll sideways to see the whole figure.");
    hint.hidden = true;
    var overflows = function () {
      hint.hidden = frame.scrollWidth <= frame.clientWidth + 1;
    };
    ratio(image);
    full.addEventListener("load", function () { ratio(full); overflows(); });
    frame.appendChild(full);
    dialog.appendChild(bar);
    dialog.appendChild(hint);
    dialog.appendChild(frame);

    // A click outside the figure (on the backdrop or the frame around the image) closes.
    dialog.addEventListener("click", function (event) {
      if (event.target === dialog || event.target === frame) {
        close();
      }
    });
    // Escape: the dialog's own cancel event, so the page keeps its scroll position.
    dialog.addEventListener("cancel", function (event) {
      event.preventDefault();
      close();
    });
    document.body.appendChild(dialog);
    document.documentElement.classList.add("manual-zoom-open");
    if (typeof dialog.showModal === "function") {
      dialog.showModal();
    } else {
      dialog.setAttribute("open", "");
    }
    button.focus();
  }

  document.addEventListener("click", function (event) {
    var link = event.target.closest ? event.target.closest("a.manual-zoom") : null;
    if (!link || event.ctrlKey || event.metaKey || event.shiftKey || event.altKey) {
      return;
    }
    event.preventDefault();
    open(link);
  });
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && dialog) {
      event.preventDefault();
      close();
    }
  });
})();
