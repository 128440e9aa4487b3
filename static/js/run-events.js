// Live run events: resume after the last seq shown, drop duplicates, reconnect with backoff.
(function () {
  "use strict";
  const list = document.getElementById("events");
  if (!list || list.dataset.live !== "1") return;
  const state = document.getElementById("stream-state");
  const statusBadge = document.getElementById("run-status");
  const runId = list.dataset.run;
  let lastSeq = parseInt(list.dataset.lastSeq || "0", 10);
  let delay = 500;
  let finished = false;

  function render(event) {
    // The server words each event (apps/runs/presenter.py); the raw JSON stays behind a toggle.
    const item = document.createElement("li");
    item.dataset.seq = event.seq;
    item.dataset.type = event.type;
    const seq = document.createElement("span");
    seq.className = "seq";
    seq.textContent = "#" + event.seq + " ";
    const text = document.createElement("span");
    text.className = "event-text";
    text.textContent = event.text || event.type;  // textContent: never parsed as HTML
    const raw = document.createElement("details");
    raw.className = "event-raw";
    const summary = document.createElement("summary");
    const type = document.createElement("code");
    type.textContent = event.type;
    summary.append(type);
    const pre = document.createElement("pre");
    pre.textContent = JSON.stringify(event.payload, null, 2);
    raw.append(summary, pre);
    item.append(seq, text, " ", raw);
    list.append(item);
    const follow = document.getElementById("autoscroll");
    if (!follow || follow.checked) list.scrollTop = list.scrollHeight;
    // The viewer refreshes its timeline, header and charts from these (static/js/viewer.js).
    document.dispatchEvent(new CustomEvent("kw:run-event", { detail: event }));
    if (event.type.startsWith("run.") && event.payload.status && statusBadge) {
      statusBadge.textContent = event.payload.status;
      statusBadge.className = "status status-" + event.payload.status;
      finished = ["succeeded", "failed", "cancelled"].includes(event.payload.status);
    }
  }

  function connect() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const socket = new WebSocket(`${scheme}://${location.host}/ws/runs/${runId}/events/?after=${lastSeq}`);
    socket.onopen = () => { delay = 500; if (state) state.textContent = "live"; };
    socket.onmessage = (message) => {
      const event = JSON.parse(message.data);
      if (typeof event.seq !== "number" || event.type === "pong" || event.seq <= lastSeq) return;
      lastSeq = event.seq;
      render(event);
      if (finished) socket.close(1000);
    };
    socket.onclose = () => {
      if (finished) { if (state) state.textContent = "finished"; return; }
      if (state) state.textContent = `reconnecting in ${Math.round(delay / 1000)} s…`;
      setTimeout(connect, delay);
      delay = Math.min(delay * 2, 15000);
    };
  }
  connect();
})();
