// PTX/SASS tab: hovering a line of the source highlights the instructions it compiled to, and hovering an
// instruction highlights its source line (rows share data-src); a click pins the highlight and scrolls the
// other pane to it. Buttons switch between SASS and PTX. Without this file both listings show, colour-banded.
(function () {
  "use strict";

  function mark(view, line, cls) {
    view.querySelectorAll("tr." + cls).forEach((tr) => tr.classList.remove(cls));
    if (line == null) return [];
    const rows = Array.from(view.querySelectorAll(`tr[data-src="${line}"]`));
    rows.forEach((tr) => tr.classList.add(cls));
    return rows;
  }

  function visible(row) {
    const table = row.closest("table");
    return !table.hidden;
  }

  function reveal(rows, from) {
    // Scroll the other pane (and the source pane, for an instruction) so the first matching row shows.
    const fromPane = from.closest(".asm-pane");
    const seen = new Set();
    rows.forEach((tr) => {
      const pane = tr.closest(".asm-pane");
      if (pane === fromPane || seen.has(pane) || !visible(tr)) return;
      seen.add(pane);
      pane.scrollTop = tr.offsetTop - pane.clientHeight / 3;
    });
  }

  function setup(view) {
    if (view.dataset.asmReady) return;
    view.dataset.asmReady = "1";
    view.classList.add("js");
    const show = (name) => {
      view.querySelectorAll("[data-asm]").forEach((t) => (t.hidden = t.dataset.asm !== name));
      view.querySelectorAll("[data-asm-show]").forEach((b) => {
        b.classList.toggle("active", b.dataset.asmShow === name);
        b.setAttribute("aria-pressed", b.dataset.asmShow === name ? "true" : "false");
      });
    };
    const first = view.querySelector("[data-asm-show].active") || view.querySelector("[data-asm-show]");
    if (first) show(first.dataset.asmShow);
    view.addEventListener("click", (e) => {
      const button = e.target.closest("[data-asm-show]");
      if (button) return show(button.dataset.asmShow);
      const row = e.target.closest("tr[data-src]");
      if (!row) return;
      const same = row.classList.contains("pinned");
      const rows = mark(view, same ? null : row.dataset.src, "pinned");
      if (!same) reveal(rows, row);
    });
    view.addEventListener("mouseover", (e) => {
      const row = e.target.closest("tr[data-src]");
      mark(view, row ? row.dataset.src : null, "hl");
    });
    view.addEventListener("mouseleave", () => mark(view, null, "hl"));
  }

  function setupAll() {
    document.querySelectorAll("[data-asm-view]").forEach(setup);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setupAll);
  else setupAll();
  document.addEventListener("htmx:afterSettle", setupAll);
})();
