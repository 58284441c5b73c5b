// The page of `git alock ui`. Every value that comes from a record, the journal or the
// file system is written with textContent or as an attribute value, never parsed as
// markup; the Content-Security-Policy forbids inline script besides.
"use strict";

const S = { state: null, offset: 0, open: new Set(), shut: new Set(), more: new Set(),
            selected: null, loading: false, again: false, first: true };
const LIMIT_CLAIMS = 12;   // claims listed per holder card
const LIMIT_JOURNAL = 300; // journal lines kept on the page

// Control characters, bidirectional overrides and invisible characters are shown escaped,
// as the terminal shows them (gitlocks.core.text.printable): no path reads backwards, and
// two names that differ only by an invisible character never read alike.
const UNSAFE = /[\x00-\x1f\x7f-\xa0\xad\u061c\u180e\u200b-\u200f\u2028-\u202f\u205f-\u206f\ufeff\ufff9-\ufffb\ud800-\udfff]/gu;
const NAMED = { "\n": "\\n", "\t": "\\t", "\r": "\\r" };
function shown(text) {
  return String(text).replace(UNSAFE, (ch) => {
    const code = ch.charCodeAt(0);
    if (NAMED[ch]) return NAMED[ch];
    if (code >= 0xdc80 && code <= 0xdcff) return "\\x" + (code - 0xdc00).toString(16).padStart(2, "0");
    return code <= 0xff ? "\\x" + code.toString(16).padStart(2, "0") : "\\u" + code.toString(16).padStart(4, "0");
  });
}
function h(tag, cls, text) {
  const el = document.createElement(tag);
  if (cls) el.className = cls;
  if (text !== undefined && text !== null) el.textContent = shown(text);
  return el;
}
function add(parent, ...kids) { for (const k of kids) if (k) parent.appendChild(k); return parent; }
function $(id) { return document.getElementById(id); }
function clear(el) { while (el.firstChild) el.removeChild(el.firstChild); return el; }

// --- colours: one per holder, stable across reloads -------------------------------------
// Distinct, readable on white; purple (INTERRUPTED) and red (an edit in another's claim)
// are left out, so that a holder's colour never reads as a warning.
const PALETTE = ["#1f6fd1", "#c2570c", "#0f8a7e", "#c0267d", "#3a8a1c", "#8a5a12",
                 "#3b4cc0", "#0a7fa8", "#6b7a0f", "#4b6584", "#a87a00"];
let COLOURS = new Map();
function hash(name) {
  let x = 2166136261;  // FNV-1a, then a finaliser so names alike in all but a letter differ
  for (let i = 0; i < name.length; i++) { x ^= name.charCodeAt(i); x = Math.imul(x, 16777619); }
  x ^= x >>> 16; x = Math.imul(x, 0x85ebca6b); x ^= x >>> 13; x = Math.imul(x, 0xc2b2ae35); x ^= x >>> 16;
  return x >>> 0;
}
function assignColours(names) {
  // Each holder keeps the colour its name hashes to unless another took it first (in name
  // order): a colour stays put as holders come and go, and no two share one while the
  // palette lasts.
  const taken = new Set();
  COLOURS = new Map();
  for (const name of [...new Set(names)].sort()) {
    let i = hash(name) % PALETTE.length;
    for (let k = 0; k < PALETTE.length && taken.has(i); k++) i = (i + 1) % PALETTE.length;
    taken.add(i);
    COLOURS.set(name, PALETTE[i]);
  }
}
function paint(el, holder) {
  const c = COLOURS.get(holder) || PALETTE[hash(holder) % PALETTE.length];
  el.style.setProperty("--c", c);
  el.style.setProperty("--bg", `color-mix(in srgb, ${c} 9%, white)`);
  return el;
}

// --- time ---------------------------------------------------------------------------------
function nowMs() { return Date.now() + S.offset; }
function ago(iso) {
  if (!iso) return "never";
  const s = Math.max(0, Math.round((nowMs() - Date.parse(iso)) / 1000));
  return dur(s) + " ago";
}
function until(iso) {
  const s = Math.round((Date.parse(iso) - nowMs()) / 1000);
  return s >= 0 ? "in " + dur(s) : dur(-s) + " ago";
}
function dur(s) {
  if (s < 60) return s + "s";
  const m = Math.round(s / 60);
  if (m < 60) return m + "m";
  const hh = Math.floor(m / 60), mm = m % 60;
  if (hh < 24) return mm ? `${hh}h${mm}m` : `${hh}h`;
  const d = Math.floor(hh / 24), rh = hh % 24;
  return rh ? `${d}d${rh}h` : `${d}d`;
}
function clock(iso) { return iso && iso.length >= 19 ? iso.slice(11, 19) : String(iso || ""); }
function timed(el, iso, how) { el.dataset.at = iso || ""; el.dataset.how = how; el.textContent = (how === "until" ? until : ago)(iso); return el; }
function tick() {
  for (const el of document.querySelectorAll("[data-at]")) {
    el.textContent = (el.dataset.how === "until" ? until : ago)(el.dataset.at);
  }
}

// --- the claim chip, as the tree, the holders and the detail show it -------------------
const STATE_WORDS = { stale: "STALE", interrupted: "INTERRUPTED", dead: "GONE" };
function chip(lock, text) {
  const el = paint(h("button", "chip"), lock.holder);
  el.type = "button";
  el.dataset.id = lock.id;
  add(el, h("span", "who", lock.holder));
  if (text) add(el, h("span", "what", text));
  if (lock.shared) { el.classList.add("shared"); add(el, h("span", "tag", "shared")); }
  if (STATE_WORDS[lock.state]) { el.classList.add(lock.state); add(el, h("span", "tag", STATE_WORDS[lock.state])); }
  if (lock.until_merged) { el.classList.add("merged"); add(el, h("span", "tag", "until " + lock.until_merged)); }
  el.title = shown(lock.paths.join("  "));
  el.addEventListener("click", (ev) => { ev.stopPropagation(); show(lock.id); });
  return el;
}

// --- the tree ---------------------------------------------------------------------------
function node(name, path, dir) {
  return { name, path, dir, kids: new Map(), claims: [], edits: [], files: 0, hot: false, known: false };
}
function place(root, path, dir) {
  let at = root;
  if (path === "") return at;
  const parts = path.split("/");
  for (let i = 0; i < parts.length; i++) {
    const last = i === parts.length - 1;
    let next = at.kids.get(parts[i]);
    if (!next) {
      next = node(parts[i], parts.slice(0, i + 1).join("/"), last ? dir : true);
      at.kids.set(parts[i], next);
    } else if (!last && !next.dir) {
      next.dir = true;
    }
    at = next;
  }
  return at;
}
const NAMES = new Intl.Collator(undefined, { numeric: true });  // area2 before area10
function buildTree(st) {
  const root = node(st.repo, "", true);
  for (const f of st.files) place(root, f, false).known = true;
  for (const lock of st.locks) {
    lock.anchors.forEach(([where, under], i) => {
      const n = place(root, where, under);
      const pattern = lock.paths[i];
      const rest = pattern === where ? "" : where && pattern.startsWith(where + "/") ? pattern.slice(where.length + 1) : pattern;
      n.claims.push({ lock, rest: rest === "**" ? "" : rest });
    });
  }
  for (const wt of st.worktrees) {
    for (const e of wt.edits) place(root, e.path, false).edits.push({ wt, e });
  }
  (function mark(n) {
    let files = n.dir ? 0 : 1, hot = n.claims.length > 0 || n.edits.length > 0;
    for (const k of n.kids.values()) { mark(k); files += k.files; hot = hot || k.hot; }
    n.files = files; n.hot = hot;
  })(root);
  return root;
}
function isOpen(n) {
  if (S.open.has(n.path)) return true;
  if (S.shut.has(n.path)) return false;
  return n.hot;
}
function renderTree(root) {
  const box = clear($("tree"));
  const frag = document.createDocumentFragment();
  row(frag, root, 0);
  if (isOpen(root)) kids(frag, root, 1);
  box.appendChild(frag);
  if (S.state.files_left_out) {
    box.appendChild(h("div", "note", `${S.state.files_left_out} more files not listed (only claims and edits are drawn beyond the first 50,000)`));
  }
}
function kids(frag, n, depth) {
  const all = [...n.kids.values()].sort((a, b) => (b.dir - a.dir) || NAMES.compare(a.name, b.name));
  const cold = all.filter((k) => !k.hot && !k.dir);
  const showCold = S.more.has(n.path) || cold.length <= 3 || !n.hot;
  for (const k of all) {
    if (!k.hot && !k.dir && !showCold) continue;
    row(frag, k, depth);
    if (k.dir && isOpen(k)) kids(frag, k, depth + 1);
  }
  if (!showCold) {
    const more = h("div", "row more", `… ${cold.length} more files`);
    more.style.paddingLeft = (depth * 16 + 22) + "px";
    more.addEventListener("click", () => { S.more.add(n.path); render(); });
    frag.appendChild(more);
  }
}
function row(frag, n, depth) {
  const r = h("div", "row" + (n.dir ? " dir" : " file") + (n.known || n.dir ? "" : " new"));
  r.style.paddingLeft = (depth * 16 + 6) + "px";
  r.dataset.path = n.path;
  const open = n.dir && isOpen(n);
  add(r, h("span", "twist", n.dir && n.kids.size ? (open ? "▾" : "▸") : ""));
  add(r, h("span", "name", n.dir ? (n.path === "" ? n.name + "/" : n.name + "/") : n.name));
  if (n.dir && !open) add(r, h("span", "count", n.files === 1 ? "1 file" : `${n.files} files`));
  if (!n.known && !n.dir) add(r, h("span", "count", "not in git yet"));
  for (const c of n.claims) add(r, chip(c.lock, c.rest));
  for (const { wt, e } of n.edits) add(r, editMark(wt, e));
  if (n.dir) {
    r.addEventListener("click", () => {
      if (isOpen(n)) { S.open.delete(n.path); S.shut.add(n.path); }
      else { S.shut.delete(n.path); S.open.add(n.path); }
      render();
    });
  }
  frag.appendChild(r);
}
const WHERE = {
  claimed: ["ok", "in its claim"],
  elsewhere: ["bad", "inside another worktree's claim"],
  interrupted: ["warn", "inside interrupted work"],
  unclaimed: ["warn", "unclaimed"],
};
function editMark(wt, e) {
  const [kind, words] = WHERE[e.where] || ["warn", e.where];
  const where = wt.path.split("/").filter(Boolean).pop() || wt.path;
  const el = h("span", "edit " + kind, (e.xy.trim() || "M") + (e.where === "elsewhere" ? " in " + where : ""));
  el.title = shown(`${words}: edited in ${wt.path}${e.holders.length ? " (claim of " + e.holders.join(", ") + ")" : ""}`);
  return el;
}

// --- holders ------------------------------------------------------------------------------
function renderHolders(st) {
  const box = clear($("holders"));
  const byId = new Map(st.locks.map((l) => [l.id, l]));
  if (!st.holders.length) box.appendChild(h("p", "empty", "No agent session runs here, and nobody holds a claim."));
  const waits = new Map();
  for (const w of st.waiters || []) waits.set(w.holder, [...(waits.get(w.holder) || []), w]);
  for (const ho of st.holders) {
    const card = paint(h("div", "card " + ho.state + (ho.locks.length ? "" : " idle")), ho.holder);
    card.dataset.holder = ho.holder;
    const head = add(h("div", "card-head"), h("span", "holder", ho.holder));
    if (STATE_WORDS[ho.state]) add(head, h("span", "badge " + ho.state, STATE_WORDS[ho.state]));
    if (ho.running) add(head, h("span", "badge running", "RUNNING"));
    if (ho.last_active) add(head, timed(h("span", "beat"), ho.last_active, "ago"));
    card.appendChild(head);
    const where = [ho.host, ho.session && `${ho.session}${ho.pid ? " " + ho.pid : ""}`, ho.branch && "on " + ho.branch].filter(Boolean);
    if (where.length) card.appendChild(h("div", "meta", where.join(" · ")));
    if (ho.worktree) card.appendChild(h("div", "meta path", ho.worktree));
    if (ho.parent || ho.children.length) {
      const fam = h("div", "meta");
      if (ho.parent) add(fam, h("span", null, "sub-agent of "), paint(h("span", "name-tag", ho.parent), ho.parent));
      if (ho.children.length) {
        add(fam, h("span", null, (ho.parent ? " · " : "") + "leads "));
        ho.children.forEach((c) => add(fam, paint(h("span", "name-tag", c), c)));
      }
      card.appendChild(fam);
    }
    const claims = h("div", "claims");
    ho.locks.slice(0, LIMIT_CLAIMS).forEach((id) => {
      const l = byId.get(id);
      if (l) claims.appendChild(chip(l, l.paths.join(" ")));
    });
    if (ho.locks.length > LIMIT_CLAIMS) claims.appendChild(h("span", "count", `+${ho.locks.length - LIMIT_CLAIMS} more`));
    if (!ho.locks.length) claims.appendChild(h("span", "note", "holds nothing"));
    card.appendChild(claims);
    for (const w of waits.get(ho.holder) || []) card.appendChild(waiting(w));
    waits.delete(ho.holder);
    box.appendChild(card);
  }
  for (const [holder, ws] of waits) {  // waiting, and holding nothing
    const card = paint(h("div", "card live idle"), holder);
    card.dataset.holder = holder;
    add(card, add(h("div", "card-head"), h("span", "holder", holder)));
    ws.forEach((w) => card.appendChild(waiting(w)));
    box.appendChild(card);
  }
}
// A claim waiting its turn (acquire --wait): the view's ``waiters``, when the store keeps a
// queue: {holder, paths, place, reason, since, blocked_by}, each but the first two optional.
function waiting(w) {
  const r = add(h("div", "wait"), h("span", "badge waiting", "WAITING" + (w.place ? " #" + w.place : "")), h("span", "epath", (w.paths || []).join(" ")));
  if (w.reason) r.title = shown(w.reason);
  if (w.since) add(r, h("span", "why", "since"), timed(h("span", "why"), w.since, "ago"));
  if ((w.blocked_by || []).length) {
    add(r, h("span", "why", "behind"));
    w.blocked_by.forEach((x) => add(r, paint(h("span", "name-tag", x), x)));
  }
  return r;
}

// --- edits ----------------------------------------------------------------------------------
function renderEdits(st) {
  const box = clear($("edits"));
  const warned = (wt) => wt.edits.some((e) => e.where === "elsewhere") ? 0 : 1;
  for (const wt of [...st.worktrees].sort((a, b) => warned(a) - warned(b))) {
    const card = h("div", "wt");
    const name = wt.path.split("/").filter(Boolean).pop() || wt.path;
    add(card, add(h("div", "wt-head"), h("span", "wt-name", name), h("span", "meta", wt.branch ? "on " + wt.branch : "detached")));
    card.appendChild(h("div", "meta path", wt.path));
    if (wt.error) card.appendChild(h("div", "edit-row bad", wt.error));
    if (!wt.edits.length && !wt.error) card.appendChild(h("div", "meta", "clean"));
    const order = { elsewhere: 0, interrupted: 1, unclaimed: 2, claimed: 3 };
    [...wt.edits].sort((a, b) => order[a.where] - order[b.where]).forEach((e) => {
      const [kind, words] = WHERE[e.where] || ["warn", e.where];
      const r = h("div", "edit-row " + kind);
      add(r, h("span", "xy", e.xy), h("span", "epath", e.path), h("span", "why", words));
      e.holders.forEach((x) => add(r, paint(h("span", "name-tag", x), x)));
      card.appendChild(r);
    });
    box.appendChild(card);
  }
}

// --- journal --------------------------------------------------------------------------------
function journalRow(ev, fresh) {
  const li = h("li", "ev ev-" + ev.event.replace(/[^a-z_-]/gi, "") + (fresh ? " fresh" : ""));
  add(li, h("span", "time", clock(ev.at)), h("span", "kind", ev.event + (ev.local ? " (local)" : "")));
  if (ev.holder) add(li, paint(h("span", "name-tag", ev.holder), ev.holder));
  li.appendChild(h("div", "line", ev.detail));
  li.title = shown(ev.text);
  if (ev.id) li.addEventListener("click", () => show(ev.id));
  return li;
}
function renderJournal(events) {
  const box = clear($("journal"));
  const frag = document.createDocumentFragment();
  for (let i = events.length - 1; i >= 0 && events.length - i <= LIMIT_JOURNAL; i--) frag.appendChild(journalRow(events[i], false));
  box.appendChild(frag);
}
function addEvents(events) {
  const box = $("journal");
  for (const ev of events) box.insertBefore(journalRow(ev, true), box.firstChild);
  while (box.childNodes.length > LIMIT_JOURNAL) box.removeChild(box.lastChild);
}

// --- header, legend, banner -----------------------------------------------------------------
function renderTop(st) {
  $("repo").textContent = shown(st.repo);
  $("repo").title = shown(st.root);
  const mode = clear($("mode"));
  if (st.remote) {
    const age = st.remote.synced_at ? ago(st.remote.synced_at) : "never";
    const badge = h("span", "mode remote", "REMOTE " + st.remote.name);
    const fresh = h("span", "fresh", "view as of ");
    const when = st.remote.synced_at ? timed(h("span"), st.remote.synced_at, "ago") : h("span", null, age);
    add(mode, badge, add(fresh, when));
    if (st.sync_error) add(mode, h("span", "bad-text", "sync failed: " + st.sync_error));
  } else {
    add(mode, h("span", "mode", "LOCAL"));
  }
  const edits = st.worktrees.reduce((n, w) => n + w.edits.length, 0);
  const bad = st.worktrees.reduce((n, w) => n + w.edits.filter((e) => e.where === "elsewhere").length, 0);
  const counts = clear($("counts"));
  add(counts, h("span", null, `${st.holders.length} holders`), h("span", null, `${st.locks.length} claims`), h("span", null, `${edits} edits`));
  if ((st.waiters || []).length) counts.appendChild(h("span", null, `${st.waiters.length} waiting`));
  if (bad) {
    // The warning the page exists for: a click brings the first such edit into view.
    const warn = h("button", "bad-text", `${bad} in another's claim`);
    warn.type = "button";
    warn.addEventListener("click", () => { const r = document.querySelector("#edits .edit-row.bad"); if (r) r.scrollIntoView({ block: "center" }); });
    counts.appendChild(warn);
  }
  const banner = $("banner");
  clear(banner);
  const notes = [...st.warnings, ...st.problems.map((p) => `${p.ref}: ${p.reason}`)];
  banner.hidden = !notes.length;
  if (notes.length) {
    banner.appendChild(h("strong", null, "Unusable refs and warnings: "));
    notes.forEach((n) => banner.appendChild(h("div", "problem", n)));
  }
}
function renderLegend() {
  const box = clear($("legend"));
  const sample = (cls, word) => add(h("span", "chip sample " + cls), h("span", "who", word));
  const mark = (cls, xy, word) => add(h("span", "legend-item"), h("span", "edit " + cls, xy), h("span", "legend-word", word));
  add(box, sample("", "exclusive"), sample("shared", "shared"), sample("stale", "STALE"),
      sample("interrupted", "INTERRUPTED"), sample("merged", "until merged"),
      mark("ok", "M", "edit in its claim"), mark("bad", "M", "in another's claim"),
      mark("warn", "??", "unclaimed"));
}

// --- the detail of one claim ------------------------------------------------------------------
function show(id) {
  S.selected = id;
  const lock = S.state && S.state.locks.find((l) => l.id === id);
  const pane = $("detail");
  const body = clear($("detail-body"));
  const title = clear($("detail-title"));
  pane.hidden = false;
  if (!lock) {
    title.textContent = shown("Lock " + id);
    body.appendChild(h("p", "empty", "No longer in the table (released, expired or broken)."));
    return;
  }
  title.appendChild(chip(lock, ""));
  const dl = h("dl", "fields");
  const field = (k, v) => { if (v === null || v === undefined || v === "" || (Array.isArray(v) && !v.length)) return; const dd = h("dd", null, Array.isArray(v) ? null : v); if (Array.isArray(v)) dd.textContent = v.map(shown).join("\n"); add(dl, h("dt", null, k), dd); };
  field("paths", lock.paths);
  field("reason", lock.reason);
  field("state", (STATE_WORDS[lock.state] || lock.state) + (lock.state === "live" ? "" : `, last heard of ${ago(lock.last_active)}`));
  field("kind", (lock.shared ? "shared" : "exclusive") + (lock.until_merged ? `, released once merged into ${lock.until_merged}` : ""));
  if (lock.awaiting.length) field("waiting for", lock.awaiting.map((c) => c.slice(0, 12)));
  field("expires", `${lock.expires_at} (${until(lock.expires_at)})`);
  field("last heartbeat", `${lock.last_active} (${ago(lock.last_active)})`);
  field("created", lock.created_at);
  field("holder", lock.holder);
  field("parent", lock.parent);
  field("host", lock.host);
  field("session", lock.session && `${lock.session}${lock.pid ? " (pid " + lock.pid + ")" : ""}`);
  field("worktree", lock.worktree);
  field("branch", lock.branch);
  field("head", lock.head);
  field("id", lock.id);
  body.appendChild(dl);
  if (lock.notes.length) {
    body.appendChild(h("h3", null, "Notes"));
    const ol = h("ol", "notes");
    lock.notes.forEach((n) => add(ol, add(h("li"), h("span", "time", n.at), h("span", null, " " + n.text))));
    body.appendChild(ol);
  }
  body.appendChild(h("h3", null, "Follow up (copy and run in the repository)"));
  const cmds = [];
  if (lock.state === "interrupted" || lock.state === "dead") cmds.push(["take over its work", `git alock resume ${lock.id}`]);
  cmds.push(["release it by force (journaled)", `git alock break ${lock.id}`]);
  if (lock.state === "live" || lock.state === "stale") cmds.push(["take over once its holder is gone", `git alock resume ${lock.id}`]);
  for (const [what, cmd] of cmds) {
    const r = h("div", "cmd");
    const code = h("code", null, cmd);
    const b = h("button", "copy", "Copy");
    b.type = "button";
    b.addEventListener("click", () => copy(cmd, code, b));
    add(r, h("div", "cmd-what", what), add(h("div", "cmd-line"), code, b));
    body.appendChild(r);
  }
}
function copy(text, code, button) {
  const done = () => { button.textContent = "Copied"; setTimeout(() => { button.textContent = "Copy"; }, 1200); };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(text).then(done, () => pick(code));
  } else {
    pick(code);
  }
}
function pick(el) {
  const range = document.createRange();
  range.selectNodeContents(el);
  const sel = window.getSelection();
  sel.removeAllRanges();
  sel.addRange(range);
}

// --- loading and following ----------------------------------------------------------------------
function render() {
  const st = S.state;
  assignColours([...st.holders.flatMap((x) => [x.holder, ...(x.parent ? [x.parent] : [])]), ...(st.waiters || []).map((w) => w.holder)]);
  renderTop(st);
  renderTree(buildTree(st));
  renderHolders(st);
  renderEdits(st);
  if (S.selected && !$("detail").hidden) show(S.selected);
}
async function load() {
  if (S.loading) { S.again = true; return; }
  S.loading = true;
  try {
    const res = await fetch("state", { cache: "no-store" });
    if (!res.ok) throw new Error("HTTP " + res.status);
    const st = await res.json();
    S.offset = Date.parse(st.now) - Date.now();
    const first = S.first;
    S.state = st;
    render();
    if (first || S.rejournal) {
      renderJournal(st.events);
      S.rejournal = false;
    }
    if (first) {
      S.first = false;
      renderLegend();
      document.body.dataset.firstRender = String(Math.round(performance.now()));
      follow(st.seq);
    }
  } catch (err) {
    $("link").textContent = "cannot load: " + err.message;
    $("link").className = "link down";
  } finally {
    S.loading = false;
    if (S.again) { S.again = false; load(); }
  }
}
function follow(seq) {
  const es = new EventSource("events?since=" + seq);
  es.addEventListener("open", () => { $("link").textContent = "live"; $("link").className = "link up"; });
  es.addEventListener("error", () => { $("link").textContent = "reconnecting…"; $("link").className = "link down"; });
  es.addEventListener("change", (m) => {
    const msg = JSON.parse(m.data);
    if (msg.error) {
      $("link").textContent = shown("cannot read the locks: " + msg.error);
      $("link").className = "link down";
      return;
    }
    $("link").textContent = "live";
    $("link").className = "link up";
    if (msg.reload) S.rejournal = true;  // missed more than the server keeps
    else if (msg.events && msg.events.length) addEvents(msg.events);
    load();
  });
}

document.addEventListener("DOMContentLoaded", () => {
  $("detail-close").addEventListener("click", () => { $("detail").hidden = true; S.selected = null; });
  document.addEventListener("keydown", (e) => { if (e.key === "Escape") { $("detail").hidden = true; S.selected = null; } });
  setInterval(tick, 5000);
  load();
});
