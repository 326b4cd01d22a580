// The memory browser's one script. Every page is the same shell: this script loads the page's
// part (HTML the server rendered and escaped) from /ui/part/... with the key held in this tab's
// session storage as an Authorization header, follows links and forms without reloading, sends
// the changes made on a memory's page, and keeps the open page current through the change
// stream of its scope. It never inserts text as markup: parts come parsed by DOMParser (no
// script in them runs) and messages are set as text.

const KEY = "agentcore.key";
const STREAM_RETRY_MS = 2000;
const REFRESH_DELAY_MS = 100;

const main = document.getElementById("page");
const keyForm = document.getElementById("key-form");
const keyInput = document.getElementById("key-input");
const forgetKey = document.getElementById("forget-key");
const liveStatus = document.getElementById("live");

let shown = 0; // counts the pages shown: a late answer for an earlier page is dropped
let stream = null; // the AbortController of the open change stream
let refreshTimer = 0;

function authHeaders(extra = {}) {
  const key = sessionStorage.getItem(KEY);
  return key ? { ...extra, authorization: `Bearer ${key}` } : extra;
}

function partAddress(address) {
  const url = new URL(address, location.origin);
  const page = url.pathname.replace(/^\/ui\/?/, "") || "scopes";
  return `/ui/part/${page}${url.search}`;
}

async function fetchPart(address, init = {}) {
  const response = await fetch(address, {
    ...init,
    headers: authHeaders(init.headers || {}),
    credentials: "omit",
    cache: "no-store",
  });
  const html = await response.text();
  const part = new DOMParser().parseFromString(html, "text/html").body.firstElementChild;
  return { status: response.status, part };
}

function note(text) {
  const p = document.createElement("p");
  p.className = "error";
  p.setAttribute("role", "alert");
  p.textContent = text;
  return p;
}

function place(part, status) {
  main.replaceChildren(part ? document.importNode(part, true) : note("Nothing to show."));
  main.removeAttribute("aria-busy");
  const title = part?.dataset.title || "Memory";
  document.title = `${title} · AgentCore Memory`;
  const needKey = status === 401;
  keyForm.hidden = !needKey;
  forgetKey.hidden = !sessionStorage.getItem(KEY);
  if (needKey) keyInput.focus();
  document.body.dataset.shownAt = String(performance.now());
}

async function show(address, { push = false } = {}) {
  const mine = ++shown;
  stopLive();
  main.setAttribute("aria-busy", "true");
  let answer;
  try {
    answer = await fetchPart(partAddress(address));
  } catch {
    if (mine === shown) place(note("The service did not answer; retry in a moment."), 0);
    return;
  }
  if (mine !== shown) return;
  if (push) history.pushState(null, "", address);
  place(answer.part, answer.status);
  if (push) main.focus({ preventScroll: false });
  if (answer.status === 200) startLive(answer.part);
}

function stopLive() {
  clearTimeout(refreshTimer);
  if (stream) stream.abort();
  stream = null;
  liveStatus.textContent = "";
}

function startLive(part) {
  const scope = part?.dataset.live;
  if (!scope) return;
  const controller = new AbortController();
  stream = controller;
  follow(scope, controller).finally(() => {
    if (stream !== controller) return;
    liveStatus.textContent = "";
    setTimeout(() => {
      if (stream === controller) startLive(part);
    }, STREAM_RETRY_MS);
  });
}

async function follow(scope, controller) {
  let response;
  try {
    response = await fetch(`/ui/part/stream?scope=${encodeURIComponent(scope)}`, {
      headers: authHeaders(),
      credentials: "omit",
      cache: "no-store",
      signal: controller.signal,
    });
  } catch {
    return;
  }
  if (!response.ok || !response.body) return;
  liveStatus.textContent = "Live";
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const frame = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        if (/^id: /m.test(frame)) changed();
      }
    }
  } catch {
    // aborted (another page) or the connection dropped: startLive reconnects when it is ours
  }
}

function changed() {
  clearTimeout(refreshTimer);
  refreshTimer = setTimeout(refresh, REFRESH_DELAY_MS);
}

async function refresh() {
  const mine = shown;
  let answer;
  try {
    answer = await fetchPart(partAddress(location.pathname + location.search));
  } catch {
    return;
  }
  if (mine !== shown) return;
  const region = main.querySelector("[data-live-region]");
  const fresh = answer.part?.querySelector("[data-live-region]");
  if (answer.status === 200 && region && fresh) {
    region.replaceWith(document.importNode(fresh, true));
    liveStatus.textContent = `Live · updated ${new Date().toLocaleTimeString()}`;
  } else if (answer.status === 404) {
    place(answer.part, answer.status); // the memory was deleted elsewhere
  }
}

function tagsOf(text) {
  return (text || "")
    .split(",")
    .map((tag) => tag.trim())
    .filter((tag) => tag);
}

async function act(form) {
  const action = form.dataset.action;
  const data = new FormData(form);
  const body = { action, id: form.dataset.id };
  if (action === "update") {
    body.content = data.get("content");
    body.tags = tagsOf(data.get("tags"));
    body.importance = Number(data.get("importance"));
    body.critical = data.get("critical") !== null;
  } else if (action === "promote") {
    body.target_scope = data.get("target_scope");
  }
  const button = form.querySelector("button[type=submit]");
  button.disabled = true;
  let answer;
  try {
    answer = await fetchPart(`/ui/part/memory?scope=${encodeURIComponent(form.dataset.scope)}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  } catch {
    answer = { status: 0, part: note("The service did not answer; nothing was changed.") };
  }
  button.disabled = false;
  if (answer.status === 200) {
    shown++;
    stopLive();
    place(answer.part, answer.status);
    startLive(answer.part);
    return;
  }
  const problem = main.querySelector("#change-error");
  const text = answer.part?.querySelector(".error")?.textContent || "The change was refused.";
  if (problem) {
    problem.textContent = text;
    problem.hidden = false;
  }
}

document.addEventListener("click", (event) => {
  const link = event.target.closest("a[href]");
  if (!link || link.target || event.defaultPrevented || event.button !== 0) return;
  if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  const url = new URL(link.href);
  if (url.origin !== location.origin || !url.pathname.startsWith("/ui")) return;
  if (url.pathname.startsWith("/ui/static/") || url.hash) return;
  event.preventDefault();
  show(url.pathname + url.search, { push: true });
});

document.addEventListener("submit", (event) => {
  const form = event.target;
  if (form === keyForm) {
    event.preventDefault();
    sessionStorage.setItem(KEY, keyInput.value.trim());
    keyInput.value = "";
    show(location.pathname + location.search);
  } else if (form.dataset.get) {
    event.preventDefault();
    const query = new URLSearchParams();
    for (const [name, value] of new FormData(form)) if (value !== "") query.append(name, value);
    show(`/ui/${form.dataset.get}?${query}`, { push: true });
  } else if (form.dataset.action) {
    event.preventDefault();
    act(form);
  }
});

forgetKey.addEventListener("click", () => {
  sessionStorage.removeItem(KEY);
  show(location.pathname + location.search);
});

window.addEventListener("popstate", () => show(location.pathname + location.search));

show(location.pathname + location.search);
