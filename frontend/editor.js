// KernelWeb code editor: enhances server-rendered markup with CodeMirror 6 (see docs/frontend.md).
//   <textarea data-editor="cuda|python" [data-editor-readonly] [data-diagnostics="id"]>
//       -> a C++ (or Python, for KernelBench tasks) editor kept in sync with the (hidden) textarea,
//          compile errors from the json_script `id` shown as lint markers on their lines
//   <div data-merge> + <script type="application/json" data-side="a|b"> -> the code view: a read-only
//       side-by-side diff (or one pane when there is no side a) with a toolbar, a splitter and full screen
// Without JavaScript the textarea and the element's own fallback content stay as they are.
import { defaultKeymap, history, historyKeymap, indentWithTab } from "@codemirror/commands";
import { cpp } from "@codemirror/lang-cpp";
import { python } from "@codemirror/lang-python";
import {
  HighlightStyle,
  bracketMatching,
  foldGutter,
  foldKeymap,
  indentOnInput,
  syntaxHighlighting,
} from "@codemirror/language";
import { lintGutter, lintKeymap, setDiagnostics } from "@codemirror/lint";
import { tags as t } from "@lezer/highlight";
import { MergeView, goToNextChunk, goToPreviousChunk } from "@codemirror/merge";
import { EditorState } from "@codemirror/state";
import {
  EditorView,
  drawSelection,
  dropCursor,
  highlightActiveLine,
  highlightActiveLineGutter,
  highlightSpecialChars,
  keymap,
  lineNumbers,
} from "@codemirror/view";

const MARK = "kwEnhanced"; // data-kw-enhanced="1" on every element already handled
const MONO = 'ui-monospace, "SFMono-Regular", "DejaVu Sans Mono", Menlo, monospace';

// A plain, light IDE look that matches static/css/app.css (same greys and monospace stack).
const ideTheme = EditorView.theme({
  "&": { fontSize: "13px", border: "1px solid #d8dee4", borderRadius: "4px", backgroundColor: "#fff" },
  "&.cm-focused": { outline: "2px solid #0b6bcb55" },
  ".cm-scroller": { fontFamily: MONO, lineHeight: "1.45" },
  ".cm-gutters": { backgroundColor: "#f6f8fa", color: "#57606a", borderRight: "1px solid #d8dee4" },
  ".cm-activeLine": { backgroundColor: "#f6f8fa" },
  ".cm-activeLineGutter": { backgroundColor: "#eaeef2", color: "#1d2125" },
  "&.cm-readonly .cm-cursor": { display: "none" },
});

// The code view: compact gutters (line numbers hug the code) so two panes keep 72+ columns at 1440 px.
const compactTheme = EditorView.theme({
  "&": { fontSize: "12px", border: "0", borderRadius: "0" },
  ".cm-lineNumbers .cm-gutterElement": { padding: "0 3px 0 2px", minWidth: "2ch" },
  ".cm-content": { padding: "2px 0" },
  ".cm-line": { padding: "0 4px 0 3px" },
  ".cm-collapsedLines": { fontFamily: "system-ui, sans-serif", fontSize: "12px" },
});

// CodeMirror mounts its styles as a <style> element: the Content-Security-Policy admits it only with the
// response's nonce, which templates/base.html puts in <meta name="csp-nonce">.
const CSP_NONCE = document.querySelector('meta[name="csp-nonce"]')?.content || "";

// CodeMirror's default colours fall below 4.5:1 contrast on the diff's added/removed backgrounds (axe's
// color-contrast rule, WCAG AA); these keep at least 4.6:1 on white, both diff backgrounds and the gutters.
const readableHighlight = HighlightStyle.define([
  { tag: t.meta, color: "#4b5563" },
  { tag: t.link, textDecoration: "underline" },
  { tag: t.heading, textDecoration: "underline", fontWeight: "bold" },
  { tag: t.emphasis, fontStyle: "italic" },
  { tag: t.strong, fontWeight: "bold" },
  { tag: t.strikethrough, textDecoration: "line-through" },
  { tag: t.keyword, color: "#6f1a8a" },
  { tag: [t.atom, t.bool, t.url, t.contentSeparator, t.labelName], color: "#1f3a8a" },
  { tag: [t.literal, t.inserted], color: "#0b6e3f" },
  { tag: [t.string, t.deleted], color: "#8a1f11" },
  { tag: [t.regexp, t.escape, t.special(t.string)], color: "#8a3b00" },
  { tag: t.definition(t.variableName), color: "#0a4f8f" },
  { tag: t.local(t.variableName), color: "#1f3a8a" },
  { tag: [t.typeName, t.namespace], color: "#005c5c" },
  { tag: t.className, color: "#0b5a4a" },
  { tag: [t.special(t.variableName), t.macroName], color: "#1f4f7a" },
  { tag: t.definition(t.propertyName), color: "#0a4f8f" },
  { tag: t.comment, color: "#6b4f00" },
  { tag: t.invalid, color: "#b00020" },
]);

function languageOf(name) {
  return name === "python" ? python() : cpp();
}

function basicSetup(language = "cuda") {
  return [
    ...(CSP_NONCE ? [EditorView.cspNonce.of(CSP_NONCE)] : []),
    lineNumbers(),
    highlightActiveLineGutter(),
    highlightSpecialChars(),
    history(),
    foldGutter(),
    drawSelection(),
    dropCursor(),
    indentOnInput(),
    syntaxHighlighting(readableHighlight),
    bracketMatching(),
    highlightActiveLine(),
    keymap.of([...defaultKeymap, ...historyKeymap, ...foldKeymap, ...lintKeymap, indentWithTab]),
    EditorState.tabSize.of(4),
    languageOf(language),
    ideTheme,
    // axe does not count a contenteditable as focusable for its scrollable-region rule; say it outright.
    EditorView.contentAttributes.of({ tabindex: "0" }),
  ];
}

// Read-only panes of the code view: no fold gutter or active-line band, keyboard selection kept.
function viewSetup(language, label) {
  return [
    ...(CSP_NONCE ? [EditorView.cspNonce.of(CSP_NONCE)] : []),
    lineNumbers(),
    highlightSpecialChars(),
    drawSelection(),
    syntaxHighlighting(readableHighlight),
    bracketMatching(),
    keymap.of([
      { key: "Alt-j", run: goToNextChunk },
      { key: "Alt-k", run: goToPreviousChunk },
      ...defaultKeymap,
      ...lintKeymap,
    ]),
    EditorState.tabSize.of(4),
    languageOf(language),
    compactTheme, // before ideTheme: the earlier theme wins where both set a property
    ideTheme,
    readOnly(),
    EditorView.contentAttributes.of({ "aria-label": label }),
  ];
}

// Read-only content is not focusable by default; keyboard users must reach (and scroll) each pane.
function readOnly() {
  return [
    EditorState.readOnly.of(true),
    EditorView.editorAttributes.of({ class: "cm-readonly" }),
    EditorView.contentAttributes.of({ tabindex: "0" }),
  ];
}

function labelFor(textarea) {
  if (textarea.getAttribute("aria-label")) return textarea.getAttribute("aria-label");
  const label = textarea.id && document.querySelector(`label[for="${CSS.escape(textarea.id)}"]`);
  return label ? label.textContent.trim() : "Code";
}

// Compile errors: a JSON list of {line, severity, message} (apps/runs/codeview.py compile_diagnostics), in the
// data-diagnostics attribute itself or in the json_script it names by id, becomes CodeMirror lint diagnostics,
// each spanning its line (clamped to the document).
function readDiagnostics(value) {
  if (!value) return [];
  try {
    const text = value.trim().startsWith("[") ? value : document.getElementById(value)?.textContent;
    const parsed = text ? JSON.parse(text) : [];
    return Array.isArray(parsed) ? parsed : [];
  } catch (err) {
    console.error(err);
    return [];
  }
}

function toDiagnostics(doc, items) {
  return items
    .filter((d) => Number.isInteger(d.line) && d.line > 0)
    .map((d) => {
      const line = doc.line(Math.min(d.line, doc.lines));
      return {
        from: line.from,
        to: line.to,
        severity: d.severity === "warning" ? "warning" : "error",
        message: `line ${d.line}: ${d.message || d.severity}`,
        source: "nvcc",
      };
    });
}

function showDiagnostics(view, items) {
  if (!items.length) return;
  view.dispatch(setDiagnostics(view.state, toDiagnostics(view.state.doc, items)));
}

function enhanceTextarea(textarea) {
  if (textarea.dataset[MARK]) return;
  textarea.dataset[MARK] = "1";
  const ro = textarea.hasAttribute("data-editor-readonly") || textarea.readOnly;
  const rows = Number(textarea.getAttribute("rows")); // an explicit rows="N" keeps that much room, at most 40 lines
  const sizing = EditorView.theme({
    ".cm-scroller": { minHeight: rows > 0 ? `${Math.min(rows, 40) * 1.45}em` : "auto", maxHeight: "75vh", overflow: "auto" },
  });
  const diagnostics = readDiagnostics(textarea.dataset.diagnostics);
  const view = new EditorView({
    state: EditorState.create({
      doc: textarea.value,
      extensions: [
        basicSetup(textarea.dataset.editor),
        sizing,
        ro ? readOnly() : [],
        diagnostics.length ? lintGutter() : [],
        EditorView.contentAttributes.of({ "aria-label": labelFor(textarea) }),
        EditorView.updateListener.of((update) => {
          if (!update.docChanged) return;
          textarea.value = update.state.doc.toString();
          textarea.dispatchEvent(new Event("input", { bubbles: true }));
        }),
      ],
    }),
  });
  textarea.after(view.dom);
  // hidden, not style.display: htmx copies a swapped element's style attribute, which the CSP refuses
  textarea.hidden = true;
  // A hidden required field that is empty blocks the submit with no visible message; the server validates anyway.
  textarea.required = false;
  textarea.kwEditor = view;
  showDiagnostics(view, diagnostics);
  if (textarea.id) {
    const label = document.querySelector(`label[for="${CSS.escape(textarea.id)}"]`);
    if (label) label.addEventListener("click", () => view.focus());
  }
  // A form reset restores the textarea's default value; show it in the editor too.
  if (textarea.form) {
    textarea.form.addEventListener("reset", () =>
      setTimeout(() => {
        const doc = textarea.value;
        if (doc !== view.state.doc.toString()) view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: doc } });
      }),
    );
  }
}

// The side's text: a <template data-side="a|b"> child (its content as text; htmx keeps templates but drops
// scripts from swapped content), else a <script type="application/json" data-side="a|b"> child holding a JSON
// string; without data-side attributes, the first and the second JSON script child are a and b (so two plain
// `json_script` tags work too). Returns null when the side is absent.
function sideText(el, side) {
  const tpl = el.querySelector(`:scope > template[data-side="${side}"]`);
  if (tpl) return tpl.content.textContent;
  const script =
    el.querySelector(`:scope > script[type="application/json"][data-side="${side}"]`) ||
    el.querySelectorAll(':scope > script[type="application/json"]:not([data-side])')[side === "a" ? 0 : 1];
  if (!script) return null;
  const value = JSON.parse(script.textContent);
  if (typeof value !== "string") throw new Error(`data-merge: side ${side} is not a JSON string`);
  return value;
}

function button(text, title, onClick) {
  const b = document.createElement("button");
  b.type = "button";
  b.className = "kw-cv-btn";
  b.textContent = text;
  b.title = title;
  b.addEventListener("click", onClick);
  return b;
}

// A draggable (and keyboard-operable) separator between the two panes; the left pane's share is a flex basis.
function addSplitter(el, merge) {
  const editors = merge.dom.querySelector(".cm-mergeViewEditors");
  const [left, right] = editors.querySelectorAll(":scope > .cm-mergeViewEditor");
  if (!left || !right) return;
  const split = document.createElement("div");
  split.className = "kw-cv-split";
  split.tabIndex = 0;
  split.setAttribute("role", "separator");
  split.setAttribute("aria-orientation", "vertical");
  split.setAttribute("aria-label", "Resize the panes (← →, double-click to reset)");
  split.setAttribute("aria-valuemin", "15");
  split.setAttribute("aria-valuemax", "85");
  editors.insertBefore(split, right);
  const set = (pct) => {
    pct = Math.max(15, Math.min(85, pct));
    left.style.flex = `0 0 ${pct}%`;
    right.style.flex = "1 1 0";
    split.setAttribute("aria-valuenow", String(Math.round(pct)));
    el.dataset.split = String(Math.round(pct));
    merge.a.requestMeasure();
    merge.b.requestMeasure();
  };
  const current = () => (left.getBoundingClientRect().width / editors.getBoundingClientRect().width) * 100;
  split.setAttribute("aria-valuenow", "50");
  split.addEventListener("pointerdown", (e) => {
    e.preventDefault();
    split.setPointerCapture(e.pointerId);
    const box = editors.getBoundingClientRect();
    const move = (ev) => set(((ev.clientX - box.left) / box.width) * 100);
    const up = () => {
      split.removeEventListener("pointermove", move);
      split.removeEventListener("pointerup", up);
    };
    split.addEventListener("pointermove", move);
    split.addEventListener("pointerup", up);
  });
  split.addEventListener("dblclick", () => set(50));
  split.addEventListener("keydown", (e) => {
    const step = { ArrowLeft: -5, ArrowRight: 5 }[e.key];
    if (step) {
      e.preventDefault();
      set(current() + step);
    } else if (e.key === "Home" || e.key === "End") {
      e.preventDefault();
      set(e.key === "Home" ? 15 : 85);
    }
  });
}

// Full screen is a class on the element (position: fixed over the page, static/css/codeview.css); Esc leaves.
let fullScreenEl = null;
function setFullScreen(el, on) {
  el.classList.toggle("kw-cv-full", on);
  document.documentElement.classList.toggle("kw-cv-noscroll", on);
  const toggle = el.querySelector(".kw-cv-fullscreen");
  if (toggle) {
    toggle.setAttribute("aria-pressed", String(on));
    toggle.textContent = on ? "Exit full screen" : "Full screen";
  }
  fullScreenEl = on ? el : null;
  if (on) (el.kwMerge?.b || el.kwView)?.focus();
  else toggle?.focus();
}
document.addEventListener("keydown", (e) => {
  if (e.key === "Escape" && fullScreenEl) {
    e.preventDefault();
    setFullScreen(fullScreenEl, false);
  }
});

function enhanceMerge(el) {
  if (el.dataset[MARK]) return;
  el.dataset[MARK] = "1";
  let a, b;
  try {
    a = sideText(el, "a");
    b = sideText(el, "b");
    if (b === null) throw new Error('data-merge: no <script type="application/json" data-side="b">');
  } catch (err) {
    console.error(err); // keep the server-rendered fallback
    return;
  }
  const language = el.dataset.language || "cuda";
  const labelA = el.dataset.labelA || "before";
  const labelB = el.dataset.labelB || "after";
  const diagnostics = readDiagnostics(el.dataset.diagnostics);
  const collapse = { margin: 3, minSize: 8 };
  const collapsed = el.dataset.mergeCollapse !== "false";

  const bar = document.createElement("div");
  bar.className = "kw-cv-bar";
  bar.setAttribute("role", "toolbar");
  bar.setAttribute("aria-label", "Code view");
  const titles = document.createElement("div");
  titles.className = "kw-cv-titles";
  for (const [cls, text] of a === null ? [["b", labelB]] : [["a", labelA], ["b", labelB]]) {
    const t = document.createElement("span");
    t.className = `kw-cv-title kw-cv-title-${cls}`;
    t.textContent = text;
    titles.append(t);
  }
  const tools = document.createElement("div");
  tools.className = "kw-cv-tools";
  bar.append(titles, tools);
  const body = document.createElement("div");
  body.className = "kw-cv-body";
  el.replaceChildren(bar, body);
  el.classList.add("kw-cv");

  if (a === null) {
    // Nothing to compare with: one read-only pane of the same look.
    const view = new EditorView({
      parent: body,
      state: EditorState.create({ doc: b, extensions: [viewSetup(language, labelB), diagnostics.length ? lintGutter() : []] }),
    });
    el.kwView = view;
    showDiagnostics(view, diagnostics);
  } else {
    const merge = new MergeView({
      a: { doc: a, extensions: viewSetup(language, labelA) },
      b: { doc: b, extensions: [viewSetup(language, labelB), diagnostics.length ? lintGutter() : []] },
      parent: body,
      highlightChanges: true,
      gutter: true,
      collapseUnchanged: collapsed ? collapse : undefined,
    });
    el.kwMerge = merge;
    showDiagnostics(merge.b, diagnostics);
    addSplitter(el, merge);
    const chunkStep = (command) => () => {
      merge.b.focus();
      command(merge.b);
    };
    tools.append(
      button("↑ Change", "Previous change (Alt-K in a pane)", chunkStep(goToPreviousChunk)),
      button("↓ Change", "Next change (Alt-J in a pane)", chunkStep(goToNextChunk)),
    );
    const unchanged = button(collapsed ? "Show all lines" : "Collapse unchanged", "Show or collapse the unchanged regions", () => {
      const now = unchanged.getAttribute("aria-pressed") !== "true";
      merge.reconfigure({ collapseUnchanged: now ? undefined : collapse });
      unchanged.setAttribute("aria-pressed", String(now));
      unchanged.textContent = now ? "Collapse unchanged" : "Show all lines";
      el.dataset.collapsed = String(!now);
    });
    unchanged.classList.add("kw-cv-unchanged");
    unchanged.setAttribute("aria-pressed", String(!collapsed));
    el.dataset.collapsed = String(collapsed);
    tools.append(unchanged);
  }
  const full = button("Full screen", "Full screen (Esc leaves)", () => setFullScreen(el, !el.classList.contains("kw-cv-full")));
  full.classList.add("kw-cv-fullscreen");
  full.setAttribute("aria-pressed", "false");
  tools.append(full);
}

export function enhance(root = document) {
  root.querySelectorAll('textarea[data-editor="cuda"], textarea[data-editor="python"]').forEach(enhanceTextarea);
  root.querySelectorAll("[data-merge]").forEach(enhanceMerge);
  // the key help is about the enhanced view: shown only once there is one
  root.querySelectorAll(".kw-cv-keys[hidden]").forEach((p) => { p.hidden = false; });
}

// Scroll the code view `el` to line `n` of its right-hand (or only) pane and put the cursor there.
export function revealLine(el, n) {
  const view = el && (el.kwMerge ? el.kwMerge.b : el.kwView);
  if (!view) return false;
  const merge = el.kwMerge;
  if (merge) {
    // a line inside a collapsed region is shown first
    merge.reconfigure({ collapseUnchanged: undefined });
    el.dataset.collapsed = "false";
    const toggle = el.querySelector(".kw-cv-unchanged");
    if (toggle) { toggle.setAttribute("aria-pressed", "true"); toggle.textContent = "Collapse unchanged"; }
  }
  const line = view.state.doc.line(Math.max(1, Math.min(n, view.state.doc.lines)));
  view.dispatch({ selection: { anchor: line.from }, effects: EditorView.scrollIntoView(line.from, { y: "center" }) });
  view.focus();
  return true;
}

window.KWEditor = { enhance, revealLine };
if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", () => enhance());
else enhance();
document.addEventListener("htmx:afterSwap", () => {
  // A swapped-out code view cannot leave the page stuck in full screen.
  if (fullScreenEl && !document.contains(fullScreenEl)) {
    document.documentElement.classList.remove("kw-cv-noscroll");
    fullScreenEl = null;
  }
  enhance();
});
