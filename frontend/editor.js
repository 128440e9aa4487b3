// KernelWeb code editor: enhances server-rendered markup with CodeMirror 6 (see docs/frontend.md).
//   <textarea data-editor="cuda|python" [data-editor-readonly]>  -> a C++ (or Python, for KernelBench tasks) editor
//                                                              kept in sync with the (hidden) textarea
//   <div data-merge> + two <script type="application/json" data-side="a|b"> -> a read-only side-by-side diff
// Without JavaScript the textarea and the element's own fallback content stay as they are.
import { defaultKeymap, history, historyKeymap, indentWithTab } from "@codemirror/commands";
import { cpp } from "@codemirror/lang-cpp";
import { python } from "@codemirror/lang-python";
import {
  bracketMatching,
  defaultHighlightStyle,
  foldGutter,
  foldKeymap,
  indentOnInput,
  syntaxHighlighting,
} from "@codemirror/language";
import { MergeView } from "@codemirror/merge";
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

// A plain, light IDE look that matches static/css/app.css (same greys and monospace stack).
const ideTheme = EditorView.theme({
  "&": { fontSize: "13px", border: "1px solid #d8dee4", borderRadius: "4px", backgroundColor: "#fff" },
  "&.cm-focused": { outline: "2px solid #0b6bcb55" },
  ".cm-scroller": { fontFamily: 'ui-monospace, "SFMono-Regular", Menlo, monospace', lineHeight: "1.45" },
  ".cm-gutters": { backgroundColor: "#f6f8fa", color: "#8c959f", borderRight: "1px solid #d8dee4" },
  ".cm-activeLine": { backgroundColor: "#f6f8fa" },
  ".cm-activeLineGutter": { backgroundColor: "#eaeef2", color: "#1d2125" },
  "&.cm-readonly .cm-cursor": { display: "none" },
});

// CodeMirror mounts its styles as a <style> element: the Content-Security-Policy admits it only with the
// response's nonce, which templates/base.html puts in <meta name="csp-nonce">.
const CSP_NONCE = document.querySelector('meta[name="csp-nonce"]')?.content || "";

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
    syntaxHighlighting(defaultHighlightStyle, { fallback: true }),
    bracketMatching(),
    highlightActiveLine(),
    keymap.of([...defaultKeymap, ...historyKeymap, ...foldKeymap, indentWithTab]),
    EditorState.tabSize.of(4),
    language === "python" ? python() : cpp(),
    ideTheme,
  ];
}

function readOnly() {
  return [EditorState.readOnly.of(true), EditorView.editorAttributes.of({ class: "cm-readonly" })];
}

function labelFor(textarea) {
  if (textarea.getAttribute("aria-label")) return textarea.getAttribute("aria-label");
  const label = textarea.id && document.querySelector(`label[for="${CSS.escape(textarea.id)}"]`);
  return label ? label.textContent.trim() : "Code";
}

function enhanceTextarea(textarea) {
  if (textarea.dataset[MARK]) return;
  textarea.dataset[MARK] = "1";
  const ro = textarea.hasAttribute("data-editor-readonly") || textarea.readOnly;
  const rows = Number(textarea.getAttribute("rows")); // an explicit rows="N" keeps that much room, at most 40 lines
  const sizing = EditorView.theme({
    ".cm-scroller": { minHeight: rows > 0 ? `${Math.min(rows, 40) * 1.45}em` : "auto", maxHeight: "75vh", overflow: "auto" },
  });
  const view = new EditorView({
    state: EditorState.create({
      doc: textarea.value,
      extensions: [
        basicSetup(textarea.dataset.editor),
        sizing,
        ro ? readOnly() : [],
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
  textarea.style.display = "none";
  // A hidden required field that is empty blocks the submit with no visible message; the server validates anyway.
  textarea.required = false;
  textarea.kwEditor = view;
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

// The side's <script type="application/json" data-side="a|b">; without data-side attributes, the first and the
// second JSON script child are a and b (so two plain `json_script` tags work too).
function sideText(el, side) {
  const script =
    el.querySelector(`script[type="application/json"][data-side="${side}"]`) ||
    el.querySelectorAll('script[type="application/json"]:not([data-side])')[side === "a" ? 0 : 1];
  if (!script) throw new Error(`data-merge: no <script type="application/json" data-side="${side}">`);
  const value = JSON.parse(script.textContent);
  if (typeof value !== "string") throw new Error(`data-merge: side ${side} is not a JSON string`);
  return value;
}

function enhanceMerge(el) {
  if (el.dataset[MARK]) return;
  el.dataset[MARK] = "1";
  let a, b;
  try {
    a = sideText(el, "a");
    b = sideText(el, "b");
  } catch (err) {
    console.error(err); // keep the server-rendered fallback
    return;
  }
  const extensions = [basicSetup(el.dataset.language || "cuda"), readOnly()];
  el.replaceChildren();
  el.kwMerge = new MergeView({
    a: { doc: a, extensions },
    b: { doc: b, extensions },
    parent: el,
    highlightChanges: true,
    gutter: true,
    collapseUnchanged: el.dataset.mergeCollapse === "false" ? undefined : { margin: 3, minSize: 8 },
  });
}

let styled = false;
function addStyle() {
  if (styled) return;
  styled = true;
  const style = document.createElement("style");
  style.textContent =
    ".cm-mergeView{max-height:75vh;border:1px solid #d8dee4;border-radius:4px}" +
    ".cm-mergeView .cm-editor{border:0;border-radius:0}";
  document.head.append(style);
}

export function enhance(root = document) {
  root.querySelectorAll('textarea[data-editor="cuda"], textarea[data-editor="python"]').forEach(enhanceTextarea);
  const merges = root.querySelectorAll("[data-merge]");
  if (merges.length) addStyle();
  merges.forEach(enhanceMerge);
}

window.KWEditor = { enhance };
if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", () => enhance());
else enhance();
document.addEventListener("htmx:afterSwap", () => enhance());
