// Material puts each code block's copy button in a <nav>; several unnamed <nav>s on one page are landmarks a
// screen reader cannot tell apart (axe: landmark-unique). Each gets a name of its own, "Code block N", as
// Material adds it (it does so after the page loads, so a MutationObserver watches for them).
(() => {
  const name = () => document.querySelectorAll(".md-code__nav").forEach((nav, index) => {
    const label = `Code block ${index + 1}`;
    if (nav.getAttribute("aria-label") !== label) nav.setAttribute("aria-label", label);
  });
  new MutationObserver(name).observe(document.documentElement, {childList: true, subtree: true});
  name();
})();

// Material shows "Copied to clipboard" in its dialog when a copy button is pressed, where a screen reader does not
// hear it: the dialog is made a polite live region (role="status", the whole notice read), as Zensical's own
// template has it. Set when the script runs, before any button can be pressed; the region exists from the start.
document.querySelectorAll(".md-dialog").forEach((dialog) => {
  dialog.setAttribute("role", "status");
  dialog.setAttribute("aria-atomic", "true");
});
