// Trajectory viewer: tabs, keyboard navigation over turns, and live refresh of the header,
// timeline and charts. Everything works without this file; it only makes the page quicker to use.
(function () {
  "use strict";
  const viewer = document.getElementById("viewer");
  if (!viewer) return;
  let activeTab = sessionStorage.getItem("kw-tab") || "plan";

  function setupTabs(root) {
    root.querySelectorAll("[data-tabs]").forEach((tabs) => {
      tabs.classList.add("js");
      const links = tabs.querySelectorAll("[data-tab]");
      const show = (name) => {
        if (!tabs.querySelector(`[data-tab-panel="${name}"]`)) name = "plan";
        links.forEach((a) => a.classList.toggle("active", a.dataset.tab === name));
        tabs.querySelectorAll("[data-tab-panel]").forEach((p) => p.classList.toggle("active", p.dataset.tabPanel === name));
        activeTab = name;
        sessionStorage.setItem("kw-tab", name);
      };
      links.forEach((a) => a.addEventListener("click", (e) => { e.preventDefault(); show(a.dataset.tab); }));
      show(activeTab);
    });
  }

  function selectedLabel() {
    const toolbar = document.querySelector(".turn-toolbar");
    return toolbar ? toolbar.dataset.selected : null;
  }

  function markSelected() {
    const label = selectedLabel();
    document.querySelectorAll("#timeline .turn").forEach((li) => li.classList.toggle("selected", li.dataset.label === label));
    const current = document.querySelector("#timeline .turn.selected");
    if (current) current.scrollIntoView({ block: "nearest" });
  }

  // A compile error links to #L<n>: open the right pane's line even inside the scrolled code pane.
  document.addEventListener("click", (e) => {
    const link = e.target.closest("pre.log a[data-line]");
    if (!link) return;
    const row = document.getElementById("L" + link.dataset.line);
    if (row) { e.preventDefault(); row.scrollIntoView({ block: "center" }); history.replaceState(null, "", "#L" + link.dataset.line); }
  });

  document.addEventListener("keydown", (e) => {
    if (e.target.closest("input, textarea, select, .cm-editor") || e.metaKey || e.ctrlKey || e.altKey) return;
    const step = { j: 1, ArrowDown: 1, k: -1, ArrowUp: -1 }[e.key];
    if (!step) return;
    const turns = Array.from(document.querySelectorAll("#timeline .turn a"));
    if (!turns.length) return;
    const index = turns.findIndex((a) => a.parentElement.classList.contains("selected"));
    const next = turns[Math.min(turns.length - 1, Math.max(0, (index < 0 ? 0 : index + step)))];
    if (next && next.parentElement.dataset.label !== selectedLabel()) { e.preventDefault(); next.click(); }
  });

  // Live: refresh header, timeline and charts (out-of-band fragments) when the run reports progress.
  let pending = null;
  document.addEventListener("kw:run-event", (e) => {
    const type = e.detail.type || "";
    if (!/^(turn\.|run\.|best\.|profile\.)/.test(type)) return;
    clearTimeout(pending);
    pending = setTimeout(() => {
      if (window.htmx) {
        window.htmx.ajax("GET", viewer.dataset.liveUrl, { target: "#run-header", swap: "none" });
      } else {
        fetch(viewer.dataset.liveUrl, { credentials: "same-origin" }).then((r) => r.text()).then((html) => {
          const doc = new DOMParser().parseFromString(html, "text/html");
          ["run-header", "timeline", "run-charts"].forEach((id) => {
            const fresh = doc.getElementById(id); const old = document.getElementById(id);
            if (fresh && old) old.replaceWith(fresh);
          });
          markSelected();
        });
      }
      // No turn shown yet (the run just started): load the first one.
      if (!selectedLabel() && window.htmx) window.htmx.ajax("GET", viewer.dataset.panelUrl, { target: "#turn-panel" });
    }, 250);
  });

  document.addEventListener("htmx:afterSettle", (e) => {
    if (e.target.id === "turn-panel" || e.target.closest && e.target.closest("#turn-panel")) setupTabs(document.getElementById("turn-panel"));
    markSelected();
  });
  document.addEventListener("htmx:oobAfterSwap", markSelected);

  setupTabs(document);
  markSelected();
})();
