/**
 * The chat widget, served at `GET /widget.js`. A site adds it with one tag:
 *
 *   <script src="https://WORKER/widget.js" data-site="acme" async></script>
 *
 * It adds a chat bubble (bottom right) and a panel, inside a shadow root, so the page's styles and
 * the widget's do not mix. The panel keeps the conversation and sends it whole to
 * `POST {WORKER}/v1/sites/{site}/chat` (the Worker keeps no state), reading the answer's
 * server-sent events with fetch and a ReadableStream:
 *
 *   delta     the text grows in the answer bubble (inside the aria-live="polite" log);
 *   sources   a "Sources" list of links under the answer; when every source is only the closest
 *             match (its `band`, bands.ts: the answer said the site may not cover exactly this),
 *             the answer is styled apart (class "closest": a dashed amber edge) and the list is
 *             headed "Closest match, may not answer this exactly";
 *   callback  form true: a short form (name, phone or email, need); submitting it sends
 *             "Please call me back about: <need>" with `visitor` filled in, so the lead is saved;
 *             form false: a note that the details were passed on;
 *   error     (or a JSON refusal before the stream, or a network failure) a message with a Retry
 *             button that sends the same question again.
 *
 * Keyboard: the bubble is a button (aria-label, aria-expanded); opening focuses the question field,
 * Enter sends, Escape closes and gives the focus back to the bubble. The visitor id (for rate
 * limiting and leads) is kept in localStorage when the page allows it.
 *
 * Optional attributes: `data-title` (panel title), `data-api` (the Worker's origin; by default the
 * script's own origin).
 *
 * The script is plain ES2017 kept as a string here: no framework and no build step.
 */

export const WIDGET_JS = String.raw`(function () {
  "use strict";
  var script = document.currentScript || document.querySelector('script[src*="widget.js"][data-site]');
  if (!script || window.__helppuffWidget) return;
  window.__helppuffWidget = true;
  var site = script.getAttribute("data-site") || "";
  var api = (script.getAttribute("data-api") || new URL(script.src, location.href).origin).replace(/\/+$/, "");
  var title = script.getAttribute("data-title") || "Ask us";
  var messages = [];
  var visitor = null;
  var busy = false;
  var visitorId = "";
  try {
    visitorId = localStorage.getItem("helppuff-visitor") || "";
    if (!visitorId) {
      visitorId = "v-" + Math.random().toString(36).slice(2, 12);
      localStorage.setItem("helppuff-visitor", visitorId);
    }
  } catch (e) {
    visitorId = "v-" + Math.random().toString(36).slice(2, 12);
  }

  var CSS = ":host{all:initial}" +
    "*{box-sizing:border-box;font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif}" +
    ".bubble{position:fixed;right:20px;bottom:20px;width:56px;height:56px;border-radius:50%;border:0;background:#1f5fbf;color:#fff;cursor:pointer;box-shadow:0 4px 14px rgba(0,0,0,.25);z-index:2147483000;display:flex;align-items:center;justify-content:center}" +
    ".bubble:focus-visible,button:focus-visible,input:focus-visible,textarea:focus-visible,a:focus-visible{outline:3px solid #ffb000;outline-offset:2px}" +
    ".panel{position:fixed;right:20px;bottom:88px;width:min(370px,calc(100vw - 40px));height:min(540px,calc(100vh - 120px));background:#fff;color:#1b1b1b;border-radius:12px;box-shadow:0 8px 30px rgba(0,0,0,.25);display:flex;flex-direction:column;overflow:hidden;z-index:2147483000;font-size:15px;line-height:1.45}" +
    ".panel[hidden]{display:none}" +
    ".head{display:flex;align-items:center;justify-content:space-between;padding:12px 14px;background:#1f5fbf;color:#fff}" +
    ".head h2{margin:0;font-size:16px;font-weight:600}" +
    ".close{background:transparent;border:0;color:#fff;font-size:22px;line-height:1;cursor:pointer;padding:2px 6px}" +
    ".log{flex:1;overflow-y:auto;padding:12px;display:flex;flex-direction:column;gap:10px;background:#f6f7f9}" +
    ".msg{max-width:88%;padding:8px 11px;border-radius:10px;white-space:pre-wrap;word-wrap:break-word}" +
    ".user{align-self:flex-end;background:#1f5fbf;color:#fff}" +
    ".bot{align-self:flex-start;background:#fff;border:1px solid #dde1e6}" +
    ".bot.pending:empty::after{content:'…'}" +
    ".error{align-self:stretch;background:#fdecea;border:1px solid #f5c2bd;color:#8a1c12}" +
    ".sources{margin:6px 0 0;padding:6px 0 0;border-top:1px solid #e3e6ea;font-size:13px;white-space:normal}" +
    ".sources p{margin:0 0 2px;font-weight:600}.sources ul{margin:0;padding-left:18px}.sources a{color:#1f5fbf}" +
    ".bot.closest{background:#fffaf0;border:1px dashed #b26a00}.bot.closest .sources p{color:#7a4a00}" +
    ".retry{margin-top:6px;background:#8a1c12;color:#fff;border:0;border-radius:6px;padding:4px 10px;cursor:pointer}" +
    ".form{align-self:stretch;background:#fff;border:1px solid #dde1e6;border-radius:10px;padding:10px;display:flex;flex-direction:column;gap:6px}" +
    ".form label{font-size:13px;font-weight:600}" +
    ".form input,.form textarea{width:100%;padding:6px 8px;border:1px solid #b8bfc8;border-radius:6px;font-size:14px}" +
    ".form .hint{font-size:12px;color:#5b6470;margin:0}" +
    ".form button,.send{background:#1f5fbf;color:#fff;border:0;border-radius:6px;padding:7px 12px;cursor:pointer;font-size:14px}" +
    ".form .problem{color:#8a1c12;font-size:13px;margin:0}" +
    ".compose{display:flex;gap:8px;padding:10px;border-top:1px solid #e3e6ea;background:#fff}" +
    ".compose input{flex:1;padding:8px 10px;border:1px solid #b8bfc8;border-radius:6px;font-size:15px}" +
    ".send:disabled{opacity:.6;cursor:default}" +
    ".sr{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}";

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    if (attrs) for (var k in attrs) if (Object.prototype.hasOwnProperty.call(attrs, k)) node.setAttribute(k, attrs[k]);
    if (text != null) node.textContent = text;
    return node;
  }

  var host = el("div", { "data-helppuff-widget": site });
  var root = host.attachShadow ? host.attachShadow({ mode: "open" }) : host;
  var style = el("style");
  style.textContent = CSS;
  root.appendChild(style);
  var bubble = el("button", { "class": "bubble", type: "button", "aria-label": "Open chat: " + title, "aria-expanded": "false", "aria-controls": "hp-panel" });
  bubble.innerHTML = '<svg width="26" height="26" viewBox="0 0 24 24" aria-hidden="true" focusable="false"><path fill="currentColor" d="M4 4h16a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2H9l-5 4v-4a2 2 0 0 1-2-2V6a2 2 0 0 1 2-2z"/></svg>';
  var panel = el("section", { "class": "panel", id: "hp-panel", role: "dialog", "aria-label": title, hidden: "" });
  var head = el("div", { "class": "head" });
  var h2 = el("h2", null, title);
  var close = el("button", { "class": "close", type: "button", "aria-label": "Close chat" }, "\u00d7");
  head.appendChild(h2);
  head.appendChild(close);
  var log = el("div", { "class": "log", role: "log", "aria-live": "polite", "aria-relevant": "additions text" });
  var compose = el("form", { "class": "compose" });
  var label = el("label", { "class": "sr", "for": "hp-question" }, "Your question");
  var input = el("input", { id: "hp-question", type: "text", autocomplete: "off", maxlength: "2000", placeholder: "Type your question…" });
  var send = el("button", { "class": "send", type: "submit" }, "Send");
  compose.appendChild(label);
  compose.appendChild(input);
  compose.appendChild(send);
  panel.appendChild(head);
  panel.appendChild(log);
  panel.appendChild(compose);
  root.appendChild(panel);
  root.appendChild(bubble);
  (document.body || document.documentElement).appendChild(host);

  function open() {
    panel.hidden = false;
    bubble.setAttribute("aria-expanded", "true");
    bubble.setAttribute("aria-label", "Close chat: " + title);
    if (!log.firstChild) add("bot", "Hi! Ask me anything about us.");
    input.focus();
  }
  function shut() {
    panel.hidden = true;
    bubble.setAttribute("aria-expanded", "false");
    bubble.setAttribute("aria-label", "Open chat: " + title);
    bubble.focus();
  }
  bubble.addEventListener("click", function () { if (panel.hidden) open(); else shut(); });
  close.addEventListener("click", shut);
  root.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && !panel.hidden) { event.preventDefault(); shut(); }
  });

  function add(kind, text) {
    var node = el("div", { "class": "msg " + kind }, text);
    log.appendChild(node);
    log.scrollTop = log.scrollHeight;
    return node;
  }

  compose.addEventListener("submit", function (event) {
    event.preventDefault();
    var text = input.value.trim();
    if (!text || busy) return;
    input.value = "";
    ask(text);
  });

  function ask(text) {
    add("user", text);
    messages.push({ role: "user", content: text });
    run();
  }

  function setBusy(value) {
    busy = value;
    send.disabled = value;
    log.setAttribute("aria-busy", value ? "true" : "false");
  }

  function showError(message, bot) {
    if (bot && !bot.textContent) bot.remove();
    var box = add("error", message);
    box.setAttribute("role", "alert");
    var retry = el("button", { "class": "retry", type: "button" }, "Retry");
    retry.addEventListener("click", function () {
      box.remove();
      run();
    });
    box.appendChild(el("br"));
    box.appendChild(retry);
    retry.focus();
  }

  function run() {
    setBusy(true);
    var bot = add("bot pending", "");
    var answer = "";
    var failed = null;
    var body = { messages: messages.slice(-20), visitorId: visitorId };
    if (visitor) body.visitor = visitor;
    fetch(api + "/v1/sites/" + encodeURIComponent(site) + "/chat", {
      method: "POST",
      headers: { "content-type": "application/json", accept: "text/event-stream" },
      body: JSON.stringify(body)
    }).then(function (response) {
      var type = response.headers.get("content-type") || "";
      if (!response.ok || type.indexOf("text/event-stream") === -1) {
        return response.text().then(function (raw) {
          var message = "";
          try { message = JSON.parse(raw).error || ""; } catch (e) { message = ""; }
          if (response.status === 429) message = "Too many questions just now. Please wait a minute and try again.";
          throw new Error(message || "The assistant cannot be reached right now (HTTP " + response.status + ").");
        });
      }
      return read(response.body, function (name, data) {
        if (name === "delta") {
          answer += data.text || "";
          bot.classList.remove("pending");
          bot.textContent = answer;
          log.scrollTop = log.scrollHeight;
        } else if (name === "sources") {
          showSources(bot, data.sources || []);
        } else if (name === "callback") {
          if (data.form) showForm(data.need || "");
          else if (data.saved) add("bot note", "Your details were passed on. Someone will get back to you.");
        } else if (name === "error") {
          failed = data.message || "Sorry, something went wrong.";
        }
      });
    }).then(function () {
      if (answer) messages.push({ role: "assistant", content: answer });
      if (failed) {
        if (answer) messages.pop();
        showError(failed, bot);
      } else if (!answer && !bot.querySelector(".sources")) {
        bot.remove();
      }
    }, function (error) {
      var message = error && error.message && error.message !== "Failed to fetch" && error.name !== "TypeError"
        ? error.message : "Cannot reach the assistant. Check your connection and try again.";
      showError(message, bot);
    }).then(function () { setBusy(false); });
  }

  function read(stream, onEvent) {
    var reader = stream.getReader();
    var decoder = new TextDecoder();
    var buffer = "";
    function flush(block) {
      var name = "message";
      var data = "";
      block.split("\n").forEach(function (line) {
        if (line.indexOf("event:") === 0) name = line.slice(6).trim();
        else if (line.indexOf("data:") === 0) data += line.slice(5).replace(/^ /, "");
      });
      if (!data) return;
      var parsed;
      try { parsed = JSON.parse(data); } catch (e) { return; }
      onEvent(name, parsed);
    }
    function pump() {
      return reader.read().then(function (chunk) {
        buffer += decoder.decode(chunk.value || new Uint8Array(), { stream: !chunk.done });
        buffer = buffer.replace(/\r\n?/g, "\n");
        var end;
        while ((end = buffer.indexOf("\n\n")) !== -1) {
          flush(buffer.slice(0, end));
          buffer = buffer.slice(end + 2);
        }
        if (chunk.done) {
          if (buffer.trim()) flush(buffer);
          return;
        }
        return pump();
      });
    }
    return pump();
  }

  function showSources(bot, sources) {
    if (!sources.length) return;
    var closest = sources.every(function (source) { return source.band === "closest"; });
    if (closest) bot.classList.add("closest");
    var box = el("div", { "class": "sources" });
    box.appendChild(el("p", null, closest ? "Closest match, may not answer this exactly" : "Sources"));
    var list = el("ul");
    sources.forEach(function (source) {
      var item = el("li");
      if (/^https?:\/\//i.test(source.url || "")) {
        item.appendChild(el("a", { href: source.url, target: "_blank", rel: "noopener noreferrer" }, source.title || source.url));
      } else if (source.title) {
        item.appendChild(el("span", null, source.title + " (from the business)")); // an owner's answer: no page
      } else {
        return;
      }
      list.appendChild(item);
    });
    box.appendChild(list);
    bot.appendChild(box);
  }

  var formCount = 0;
  function showForm(need) {
    formCount += 1;
    var id = "hp-cb" + formCount;
    var form = el("form", { "class": "form", "aria-label": "Request a callback" });
    form.appendChild(el("p", { "class": "hint" }, "Leave your details and we'll get back to you."));
    var fields = [["name", "Name", "text", "name"], ["contact", "Phone or email", "text", "tel"], ["need", "What do you need?", "textarea", ""]];
    var inputs = {};
    fields.forEach(function (f) {
      form.appendChild(el("label", { "for": id + f[0] }, f[1]));
      var field = f[2] === "textarea" ? el("textarea", { id: id + f[0], rows: "2", maxlength: "500" }) : el("input", { id: id + f[0], type: "text", autocomplete: f[3] });
      inputs[f[0]] = field;
      form.appendChild(field);
    });
    inputs.need.value = need;
    var problem = el("p", { "class": "problem", role: "alert" });
    var submit = el("button", { type: "submit" }, "Request a callback");
    form.appendChild(problem);
    form.appendChild(submit);
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var contact = inputs.contact.value.trim();
      var details = {};
      if (inputs.name.value.trim()) details.name = inputs.name.value.trim();
      if (/^[^\s@]+@[^\s@]+\.[A-Za-z]{2,}$/.test(contact)) details.email = contact;
      else if (/^\+?[\d\s().-]{8,20}$/.test(contact) && contact.replace(/\D/g, "").length >= 8) details.phone = contact;
      else {
        problem.textContent = "Please enter a phone number or an email address.";
        inputs.contact.focus();
        return;
      }
      if (busy) return;
      visitor = details;
      var what = inputs.need.value.trim() || need || "a callback";
      form.remove();
      ask("Please call me back about: " + what);
      input.focus();
    });
    log.appendChild(form);
    log.scrollTop = log.scrollHeight;
    inputs.name.focus();
  }
})();
`;

/** `GET /widget.js`: the script, cacheable for an hour (a day at shared caches). */
export function widgetResponse(request: Request): Response {
  const headers = {
    "content-type": "application/javascript; charset=utf-8",
    "cache-control": "public, max-age=3600, s-maxage=86400",
    "access-control-allow-origin": "*",
    "x-content-type-options": "nosniff",
  };
  if (request.method !== "GET" && request.method !== "HEAD") {
    return new Response(JSON.stringify({ error: "use GET" }), {
      status: 405,
      headers: { "content-type": "application/json; charset=utf-8", allow: "GET, HEAD" },
    });
  }
  return new Response(request.method === "HEAD" ? null : WIDGET_JS, { status: 200, headers });
}
