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

  // A compile error links to #L<n>: open that line of the turn's code, in the CodeMirror pane when
  // kw-editor.js has replaced the server-rendered one, else in the scrolled static pane.
  document.addEventListener("click", (e) => {
    const link = e.target.closest("pre.log a[data-line], .compile-errors a[data-line]");
    if (!link) return;
    const line = Number(link.dataset.line);
    const host = document.getElementById("diff");
    if (host && window.KWEditor && window.KWEditor.revealLine(host, line)) { e.preventDefault(); return; }
    const row = document.getElementById("L" + line);
    if (row) { e.preventDefault(); row.scrollIntoView({ block: "center" }); history.replaceState(null, "", "#L" + line); }
  });

  // Live status of a turn that is not evaluated yet (a manual turn just submitted): its panel says where it
  // is (queued, evaluating) and is reloaded when it finishes, so the verdict replaces "queued". Events come
  // over the run's websocket (run-events.js); a slow poll covers a stream that is down.
  function pendingToolbar() {
    const toolbar = document.querySelector(".turn-toolbar[data-pending='1']");
    return toolbar && toolbar.dataset.selected ? toolbar : null;
  }
  function editing() {
    const area = document.querySelector("#tab-edit textarea[name=code]");
    return area && area.value !== area.defaultValue;
  }
  function reloadPanel() {
    const toolbar = pendingToolbar();
    if (!toolbar || editing()) return;
    const against = (document.getElementById("diff") || {}).dataset?.against || "baseline";
    const url = `${viewer.dataset.panelUrl}?turn=${encodeURIComponent(toolbar.dataset.selected)}&against=${against}`;
    if (window.htmx) window.htmx.ajax("GET", url, { target: "#turn-panel" });
  }
  document.addEventListener("kw:run-event", (e) => {
    const toolbar = pendingToolbar();
    if (!toolbar) return;
    const p = e.detail.payload || {};
    if (`${p.round}.${p.debug}` !== toolbar.dataset.selected) return;
    const status = document.getElementById("turn-status");
    if (e.detail.type === "turn.started" && status) status.textContent = "Evaluating: compiling, checking and timing on a GPU worker…";
    if (e.detail.type === "turn.finished") {
      if (status) status.textContent = `Finished: ${p.verdict || "done"}. Loading the result…`;
      reloadPanel();
    }
  });
  setInterval(() => { if (pendingToolbar() && !document.hidden) reloadPanel(); }, 5000);

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
