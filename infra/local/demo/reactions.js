// The reaction picker: under each post's title, a button per kind the deployment has besides
// the like (the like button stays the like's). Loaded before app.js and sharing its globals (state, api, $, postEl, showLiked, …), which
// it only uses once the page has started. A deployment with the like alone gets no picker, and
// app.js's like button behaves exactly as it did before reactions existed.
"use strict";

function picking() {
  return state.kinds.length > 1;
}

// The deployment's kinds are the keys of any post's counts (the like always among them). An API
// without the route (404) has the like alone.
async function loadKinds() {
  let kinds = ["like"];
  try {
    const path = `/posts/${encodeURIComponent(POSTS[0].id)}/reactions`;
    const resp = await api("GET", path, { allow: [404] });
    if (resp.status !== 404) {
      const body = await resp.json();
      kinds = Object.keys(body.counts || {});
      if (!kinds.includes("like")) kinds.unshift("like");
    }
  } catch (e) {
    status(e.message, true);
  }
  const changed = kinds.join(",") !== state.kinds.join(",");
  state.kinds = kinds;
  if (changed) renderPickers();
  document.querySelectorAll("li.post").forEach((li) => showMine(li, []));
  document.body.dataset.kinds = kinds.join(",");
}

function renderPickers() {
  for (const li of document.querySelectorAll("li.post")) {
    li.querySelector(".reactions")?.remove();
    li.classList.toggle("picking", picking());
    if (!picking()) continue;
    const group = document.createElement("span");
    group.className = "reactions";
    group.setAttribute("role", "group");
    group.setAttribute("aria-label", "Reactions");
    for (const kind of state.kinds.filter((k) => k !== "like")) {
      const button = document.createElement("button");
      button.type = "button";
      button.className = "reaction";
      button.dataset.kind = kind;
      button.setAttribute("aria-pressed", "false");
      const label = document.createElement("span");
      label.className = "label";
      label.textContent = kind;
      const n = document.createElement("span");
      n.className = "n";
      n.textContent = "–";
      button.append(label, n);
      button.addEventListener("click", () => toggleKind(li.dataset.post, kind));
      group.append(button);
    }
    li.append(group);
  }
}

// Found by comparing, not by a selector built from a kind the server named.
function chipEl(li, kind) {
  return [...li.querySelectorAll("button.reaction")].find((b) => b.dataset.kind === kind);
}

function isHeld(li, kind) {
  const el = kind === "like" ? li.querySelector(".like") : chipEl(li, kind);
  return el?.getAttribute("aria-pressed") === "true";
}

function setHeld(li, kind, held) {
  if (kind === "like") {
    showLiked(li, held);
    return;
  }
  const chip = chipEl(li, kind);
  if (!chip) return;
  chip.setAttribute("aria-pressed", String(held));
  chip.setAttribute("aria-label", `${kind}, ${chip.querySelector(".n").textContent}`);
}

function showMine(li, mine) {
  for (const kind of state.kinds) setHeld(li, kind, mine.includes(kind));
}

function showCounts(li, counts) {
  for (const [kind, n] of Object.entries(counts)) {
    if (kind === "like") {
      li.querySelector(".count").textContent = String(n);
      continue;
    }
    const chip = chipEl(li, kind);
    if (!chip) continue;
    chip.querySelector(".n").textContent = String(n);
    chip.setAttribute("aria-label", `${kind}, ${n}`);
  }
}

// One summary item: its counts per kind, and (unless a click on the post is on its way) mine.
function showReactions(li, item) {
  if (!picking()) return;
  if (item.reactions) showCounts(li, item.reactions);
  if (item.my_reactions && !li.classList.contains("busy")) showMine(li, item.my_reactions);
}

// A click on a kind (the like button's included, once there is a picker). It is decided on what
// the page shows at the click and shown at once, then sent after any earlier click on the same
// post has been answered, so the writes reach the API in the order of the clicks. When the last
// is answered, the post's reactions are read back: `mine` is strongly consistent, so the page
// ends showing what the API holds, a single-mode replacement or a failed write included.
function toggleKind(postId, kind) {
  const li = postEl(postId);
  const held = isHeld(li, kind);
  if (!held && state.single) showMine(li, []);
  setHeld(li, kind, !held);
  li.classList.add("busy");
  state.epoch += 1;
  const token = state.token;
  const pending = (state.pending.get(postId) ?? 0) + 1;
  state.pending.set(postId, pending);
  const previous = state.writes.get(postId) ?? Promise.resolve();
  const write = previous
    .then(() => sendKind(token, postId, kind, !held))
    .catch((e) => status(e.message, true))
    .then(() => settle(token, postId));
  state.writes.set(postId, write);
}

async function sendKind(token, postId, kind, on) {
  // Signed in as someone else since the click: the click was theirs, not this user's.
  if (token !== state.token) return;
  const post = encodeURIComponent(postId);
  const path =
    kind === "like" ? `/posts/${post}/like` : `/posts/${post}/reactions/${encodeURIComponent(kind)}`;
  const resp = await api(on ? "PUT" : "DELETE", path);
  if (on && kind !== "like") {
    // Only single mode's answers name what they replaced.
    const body = await resp.json();
    if ("replaced" in body) state.single = true;
  }
}

async function settle(token, postId) {
  const left = state.pending.get(postId) - 1;
  state.pending.set(postId, left);
  if (left > 0) return;
  const li = postEl(postId);
  // After a sign-in since, the summary shows the new user's; only the busy mark is left to undo.
  if (token === state.token) {
    try {
      const path = `/posts/${encodeURIComponent(postId)}/reactions`;
      const body = await (await api("GET", path)).json();
      if (token === state.token && state.pending.get(postId) === 0) {
        // Null when the post's author keeps its counts to themselves.
        if (body.counts) showCounts(li, body.counts);
        showMine(li, body.mine);
      }
    } catch (e) {
      status(e.message, true);
    }
    if (state.pending.get(postId) !== 0) return;
  }
  li.classList.remove("busy");
  state.epoch += 1;
  state.summaryEtag = null;
  refreshSummary();
  // In single mode any kind may have replaced the like, so my likes may have changed too.
  if (state.likers.post === postId) openLikers(postId);
  loadMine(true);
}
