// The likes demo: a page on its own origin calling the public API through CORS, as any web app
// would. No framework, no build step. Only the token comes from a local-only endpoint
// (/_local/token), standing in for the app's identity provider.
"use strict";

const TITLES = [
  "Sunrise over the harbour", "My sourdough finally rose", "Ten tips for tidy Rust",
  "The cat found the box", "Rainy Sunday reading list", "First 10k, done",
  "Homemade ramen, round two", "A tiny desk setup", "Garden update: tomatoes!",
  "Why I still write letters", "Night train to the coast", "Learning the cello at 40",
  "Best bench in the park", "Fixing a bike in the rain", "Notes from a quiet café",
  "The lake froze overnight", "Grandma's lemon cake", "A map of my favourite walks",
  "Street art on 5th", "Stars from the rooftop",
];
// Ids in the API's grammar; the same for everyone, so two users see each other's likes.
const POSTS = TITLES.map((title, i) => ({ id: `demo-post-${String(i + 1).padStart(2, "0")}`, title }));
const POLL_MS = 1000;
const PAGE = 5;

const state = {
  api: "",
  user: "",
  token: "",
  summaryEtag: null,
  polling: false,
  // Bumped by a sign-in and around every like or unlike: a summary asked for before then may
  // be stale (another user's, or from before the write), and is thrown away.
  epoch: 0,
  again: false,
  likers: { post: null, cursor: null },
  mine: { cursor: null },
  // Each load of a list takes a number; an answer to any but that list's latest is dropped.
  likersLoad: 0,
  mineLoad: 0,
  // The deployment's reaction kinds (reactions.js): the like alone until the API says more.
  kinds: ["like"],
  // Learnt from the first answer naming what it replaced: one reaction per user per post.
  single: false,
  // Per post: clicks not yet answered, and the promise of the last one (clicks queue behind it).
  pending: new Map(),
  writes: new Map(),
};

const $ = (id) => document.getElementById(id);

function status(text, isError = false) {
  const el = $("status");
  el.textContent = text;
  el.classList.toggle("error", isError);
}

function idempotencyKey() {
  if (window.crypto && typeof crypto.randomUUID === "function") return crypto.randomUUID();
  return `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
}

// One call to the API. A like or unlike names itself with an Idempotency-Key, so that a retry
// (by the browser or by us) never takes effect twice. Errors are the API's JSON errors.
async function api(method, path, { headers = {}, allow = [] } = {}) {
  const h = { Authorization: `Bearer ${state.token}`, ...headers };
  if (method === "PUT" || method === "DELETE") h["Idempotency-Key"] = idempotencyKey();
  // "no-store": the browser's cache keys answers by URL alone, so within a summary's
  // `max-age=1` it would hand one user's liked_by_me to the next user signing in here. The page
  // keeps its own ETag instead.
  const resp = await fetch(state.api + path, { method, headers: h, cache: "no-store" });
  if (resp.ok || allow.includes(resp.status)) return resp;
  let message = `${method} ${path}: ${resp.status}`;
  try {
    const body = await resp.json();
    if (body && body.error) message += ` ${body.error.code}: ${body.error.message}`;
  } catch (_) { /* not JSON */ }
  if (resp.status === 503 && resp.headers.get("Retry-After")) {
    message += ` (retry after ${resp.headers.get("Retry-After")} s)`;
  }
  throw new Error(message);
}

function renderFeed() {
  const list = $("posts");
  list.replaceChildren();
  for (const post of POSTS) {
    const li = document.createElement("li");
    li.className = "post";
    li.dataset.post = post.id;
    li.innerHTML = `
      <div class="title"></div>
      <div class="actions">
        <button type="button" class="like" aria-pressed="false">♡ Like</button>
        <span class="count" aria-label="likes">–</span>
        <button type="button" class="who">Who liked</button>
      </div>`;
    li.querySelector(".title").textContent = post.title;
    li.querySelector(".like").addEventListener("click", () => toggleLike(post.id));
    li.querySelector(".who").addEventListener("click", () => openLikers(post.id));
    list.append(li);
  }
}

function postEl(id) {
  return document.querySelector(`li.post[data-post="${id}"]`);
}

function showLiked(li, liked) {
  const button = li.querySelector(".like");
  button.setAttribute("aria-pressed", String(liked));
  button.textContent = liked ? "♥ Liked" : "♡ Like";
  li.classList.toggle("liked", liked);
}

// The whole feed's counts and my likes in ONE request. With the ETag of the last answer, an
// unchanged summary costs a 304 and no body (the API exposes ETag to pages through CORS).
async function refreshSummary() {
  if (!state.token) return;
  if (state.polling) {
    state.again = true;
    return;
  }
  state.polling = true;
  const epoch = state.epoch;
  try {
    const ids = POSTS.map((p) => encodeURIComponent(p.id)).join(",");
    const headers = state.summaryEtag ? { "If-None-Match": state.summaryEtag } : {};
    const resp = await api("GET", `/likes/summary?post_ids=${ids}`, { headers, allow: [304] });
    if (resp.status === 304 || epoch !== state.epoch) return;
    const body = await resp.json();
    if (epoch !== state.epoch) return;
    state.summaryEtag = resp.headers.get("ETag");
    for (const item of body.items) {
      const li = postEl(item.post_id);
      if (!li) continue;
      showCount(li.querySelector(".count"), item);
      if (!li.classList.contains("busy")) showLiked(li, item.liked_by_me);
      showReactions(li, item);
    }
    status(`Signed in as ${state.user}.`);
  } catch (e) {
    status(e.message, true);
  } finally {
    state.polling = false;
    if (state.again || epoch !== state.epoch) {
      state.again = false;
      refreshSummary();
    }
  }
}

// A count the post's author keeps to themselves (its policy) shows as hidden; one the API could
// not read this time, as a dash.
function showCount(el, item) {
  el.classList.toggle("hidden-count", Boolean(item.count_hidden));
  if (item.count_hidden) {
    el.textContent = "🔒";
    el.title = "Only the author sees this count";
  } else {
    el.textContent = item.like_count === null ? "–" : String(item.like_count);
    el.title = "";
  }
}

async function toggleLike(postId) {
  // With a picker, the like is one kind among others (and in single mode may replace them).
  if (picking()) return toggleKind(postId, "like");
  const li = postEl(postId);
  const liked = li.querySelector(".like").getAttribute("aria-pressed") === "true";
  li.classList.add("busy");
  showLiked(li, !liked);
  state.epoch += 1;
  try {
    const path = `/posts/${encodeURIComponent(postId)}/like`;
    await api(liked ? "DELETE" : "PUT", path);
  } catch (e) {
    showLiked(li, liked);
    status(e.message, true);
    // Refused for good (the author turned likes off): said on the post, where it stays.
    if (e.message.includes("likes_disabled")) {
      li.classList.add("closed");
      li.querySelector(".like").title = "The author turned likes off for this post";
    }
  } finally {
    state.epoch += 1;
    state.summaryEtag = null;
    li.classList.remove("busy");
  }
  refreshSummary();
  if (state.likers.post === postId) openLikers(postId);
  loadMine(true);
}

function person(text, when) {
  const li = document.createElement("li");
  const who = document.createElement("span");
  who.className = "who-name";
  who.textContent = text;
  const at = document.createElement("time");
  at.dateTime = when;
  at.textContent = new Date(when).toLocaleString();
  li.append(who, at);
  return li;
}

async function openLikers(postId, more = false) {
  const load = ++state.likersLoad;
  const section = $("likers");
  section.hidden = false;
  if (!more) {
    state.likers = { post: postId, cursor: null };
    $("likers-post").textContent = POSTS.find((p) => p.id === postId)?.title ?? postId;
    $("likers-list").replaceChildren();
  }
  try {
    let path = `/posts/${encodeURIComponent(postId)}/likes?limit=${PAGE}`;
    if (more && state.likers.cursor) path += `&cursor=${encodeURIComponent(state.likers.cursor)}`;
    const resp = await api("GET", path, { allow: [403] });
    const body = await resp.json();
    if (load !== state.likersLoad) return;
    if (resp.status === 403) {
      // The author keeps who liked it to themselves (its policy), or another refusal.
      const text = body.error && body.error.code === "likers_private"
        ? "Only the post's author sees who liked it." : `${body.error && body.error.message}`;
      $("likers-list").append(Object.assign(document.createElement("li"), {
        className: "empty private", textContent: text,
      }));
      $("likers-more").hidden = true;
      return;
    }
    for (const item of body.items) $("likers-list").append(person(item.user_id, item.liked_at));
    if (!more && body.items.length === 0) {
      $("likers-list").append(Object.assign(document.createElement("li"), {
        className: "empty", textContent: "Nobody yet (listings follow a like within seconds).",
      }));
    }
    state.likers.cursor = body.next_cursor;
    $("likers-more").hidden = !body.next_cursor;
  } catch (e) {
    status(e.message, true);
  }
}

async function loadMine(fresh = true) {
  const load = ++state.mineLoad;
  if (fresh) {
    state.mine.cursor = null;
    $("mine-list").replaceChildren();
  }
  try {
    let path = `/users/me/likes?limit=${PAGE}`;
    if (!fresh && state.mine.cursor) path += `&cursor=${encodeURIComponent(state.mine.cursor)}`;
    const body = await (await api("GET", path)).json();
    if (load !== state.mineLoad) return;
    if (fresh) $("mine-list").replaceChildren();
    for (const item of body.items) {
      const title = POSTS.find((p) => p.id === item.post_id)?.title ?? item.post_id;
      $("mine-list").append(person(title, item.liked_at));
    }
    state.mine.cursor = body.next_cursor;
    $("mine-more").hidden = !body.next_cursor;
  } catch (e) {
    status(e.message, true);
  }
}

async function eraseMine() {
  if (!window.confirm(`Erase every like of ${state.user}?`)) return;
  try {
    const body = await (await api("DELETE", "/users/me/likes")).json();
    status(`Erase of ${state.user}'s likes queued (job ${body.job_id}); counts follow in seconds.`);
    state.summaryEtag = null;
    state.epoch += 1;
  } catch (e) {
    status(e.message, true);
  }
}

async function signIn(user) {
  const resp = await fetch(`/_local/token?user=${encodeURIComponent(user)}`);
  const body = await resp.json();
  if (!resp.ok) throw new Error(body.error ? body.error.message : `token: ${resp.status}`);
  state.user = body.user_id;
  state.token = body.token;
  state.summaryEtag = null;
  state.epoch += 1;
  $("likers").hidden = true;
  state.likers = { post: null, cursor: null };
  document.querySelectorAll("li.post").forEach((li) => showLiked(li, false));
  document.body.dataset.user = state.user;
  await loadKinds();
  await refreshSummary();
  await loadMine(true);
}

async function start() {
  renderFeed();
  try {
    const config = await (await fetch("/config.json")).json();
    state.api = config.api;
    $("api").textContent = state.api;
    $("signin").addEventListener("submit", (ev) => {
      ev.preventDefault();
      signIn($("user").value.trim()).catch((e) => status(e.message, true));
    });
    $("likers-more").addEventListener("click", () => openLikers(state.likers.post, true));
    $("likers-close").addEventListener("click", () => {
      $("likers").hidden = true;
      state.likers = { post: null, cursor: null };
    });
    $("mine-more").addEventListener("click", () => loadMine(false));
    $("mine-refresh").addEventListener("click", () => loadMine(true));
    $("erase").addEventListener("click", eraseMine);
    await signIn($("user").value.trim());
    // Counts are eventually consistent: poll (cheaply, with the ETag) so they follow clicks.
    setInterval(refreshSummary, POLL_MS);
  } catch (e) {
    status(`Could not start: ${e.message}`, true);
  }
}

start();
