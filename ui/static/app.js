// The running daemon, live: its state and current chat in the header, each stored turn added to
// the page of its chat, and (on a page opened with ?follow=1) a spoken switch followed.
// Text is only ever set with textContent: nothing the model or the user said becomes markup.
(function () {
  "use strict";
  // the histories open at their newest turns
  function toNewest() {
    document.querySelectorAll(".histories ol").forEach(function (list) { list.scrollTop = list.scrollHeight; });
  }
  toNewest();
  document.body.addEventListener("htmx:afterSettle", function (e) {
    if (e.target === document.body) toNewest();
  });
  // a field that wraps a one-line text (a profile entry): Enter saves it, as in a one-line input
  document.body.addEventListener("keydown", function (e) {
    if (e.key === "Enter" && !e.shiftKey && e.target.matches("textarea[data-one-line]")) {
      e.preventDefault();
      e.target.form.requestSubmit();
    }
  });

  const live = document.getElementById("live");
  if (!live || !window.EventSource) return;
  const base = document.body.dataset.base;
  let state = null;

  function pageChat() {
    const chat = document.getElementById("chat");
    return chat ? chat.dataset.chatId : null;
  }

  function showState() {
    const label = document.getElementById("live-state");
    const link = document.getElementById("live-chat");
    if (!state || !label || !link) return;
    label.textContent = state.state + (state.muted ? " (muted)" : "");
    link.textContent = state.title;
    link.dataset.chatId = state.chat_id;
    const latency = document.getElementById("live-latency");
    if (latency) latency.textContent = state.voice_to_voice;
  }

  function follow() {
    const here = pageChat();
    if (!state || !here || here === state.chat_id) return;
    if (new URLSearchParams(window.location.search).has("follow")) {
      window.location.assign(base + "/chats/" + encodeURIComponent(state.chat_id) + "?follow=1");
    }
  }

  // the pages a look-up's answer came from, as the server renders them (a non-web address as text)
  function addSources(item, sources) {
    if (!sources.length) return;
    const span = document.createElement("span");
    span.className = "sources";
    span.dataset.testid = "sources";
    span.appendChild(document.createTextNode("Sources: "));
    sources.forEach(function (source, i) {
      if (i) span.appendChild(document.createTextNode(", "));
      if (/^https?:\/\//.test(source.uri)) {
        const link = document.createElement("a");
        link.href = source.uri;
        link.rel = "noreferrer noopener";
        link.target = "_blank";
        link.textContent = source.title;
        span.appendChild(link);
      } else {
        span.appendChild(document.createTextNode(source.title + " (" + source.uri + ")"));
      }
    });
    item.appendChild(span);
  }

  function addTurn(turn) {
    const list = document.getElementById("full-history");
    if (!list || pageChat() !== turn.chat_id) return;
    if (list.querySelector('li[data-seq="' + Number(turn.seq) + '"]')) return;
    const item = document.createElement("li");
    item.className = (turn.role === "user" ? "user" : "model") + " new";
    item.dataset.seq = String(Number(turn.seq));
    const who = document.createElement("b");
    who.textContent = turn.role === "user" ? "You" : "Parla";
    item.appendChild(who);
    item.appendChild(document.createTextNode(" " + turn.text));
    addSources(item, turn.sources || []);
    const atEnd = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
    list.appendChild(item);
    if (atEnd) list.scrollTop = list.scrollHeight;
  }

  const events = new EventSource(live.dataset.events);
  events.addEventListener("state", function (e) {
    state = JSON.parse(e.data);
    showState();
    follow();
  });
  events.addEventListener("turn", function (e) { addTurn(JSON.parse(e.data)); });
  events.addEventListener("reload", function () { window.location.reload(); });
  // htmx replaces the page's body on a boosted link or form: show the state there again
  document.body.addEventListener("htmx:afterSettle", function () { showState(); follow(); });
})();
