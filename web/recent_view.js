// recent_view.js: Zulip's Recent conversations (#recent,
// web/src/recent_view_ui.ts): every conversation of the latest messages,
// channel topics and direct messages alike, the latest first, each with
// its unread count, its senders (the latest first) and the time of its
// last message. Loaded the first time it is opened; from then on it
// keeps the messages it has seen: a bounded page of the newest, older
// pages on request, and each new one as it arrives.

import { api } from './api.js';
import { el, moveFocus } from './dom.js';
import { state, messageDMKey, userName, topicName } from './state.js';
import { hashOf } from './hash.js';

const batchSize = 400; // Zulip's recent_view_initial_fetch_size
const maxAvatars = 4; // Zulip's MAX_AVATAR
const maxExtraSenders = 10; // Zulip's MAX_EXTRA_SENDERS

const messages = new Map(); // id → {id, where, sender, timestamp}
let loading = null; // the page being fetched
let loaded = false;
let foundOldest = false;
let drawn = null; // {root, narrow, onError} of the last render

// whereOf is a message's conversation: {channel, topic} or {dm}.
function whereOf(m) {
  return m.type === 'stream' ? { channel: m.stream_id, topic: m.subject } : { dm: messageDMKey(m) };
}

const keyOf = (w) => (w.dm === undefined ? `${w.channel}\n${w.topic.toLowerCase()}` : `dm:${w.dm}`);

// noteMessage keeps what a row needs of a message, new or fetched.
export function noteMessage(m) {
  messages.set(m.id, { id: m.id, where: whereOf(m), sender: m.sender_id, timestamp: m.timestamp });
}

export function moved(ids, channel, topic) {
  for (const id of ids) if (messages.has(id)) messages.get(id).where = { channel, topic };
}

export function deleted(ids) {
  for (const id of ids) messages.delete(id);
}

// reset forgets what was seen, after the page registered again: what
// arrived meanwhile comes with the next fetch.
export function reset() {
  messages.clear();
  loaded = false;
  foundOldest = false;
}

async function load(older) {
  const anchor = older ? String(Math.min(...messages.keys())) : 'newest';
  loading = api('GET', '/messages', { narrow: [], anchor, num_before: String(batchSize), num_after: '0', include_anchor: String(!older), allow_empty_topic_name: 'true', apply_markdown: 'false' });
  try {
    const page = await loading;
    for (const m of page.messages) noteMessage(m);
    foundOldest = page.found_oldest;
    loaded = true;
  } catch (err) {
    loaded = true; // what there is, until the page registers again
    drawn?.onError(err);
  } finally {
    loading = null;
    if (drawn) render(drawn.root, drawn);
  }
}

// hidden is Zulip's default filter: channels one is not subscribed to,
// muted channels and topics (unless unmuted or followed), and direct
// messages whose people are all muted.
function hidden(w) {
  if (w.dm !== undefined) {
    const muted = new Set((state.registered?.muted_users || []).map((u) => String(u.id)));
    return w.dm.split(',').every((id) => muted.has(id));
  }
  const sub = state.channels.get(w.channel);
  if (!sub) return true;
  const t = (state.registered?.user_topics || []).find((x) => x.stream_id === w.channel && x.topic_name.toLowerCase() === w.topic.toLowerCase());
  return t?.visibility_policy === 1 || (!!sub.is_muted && !(t?.visibility_policy >= 2));
}

// conversations are the rows: the last message and the senders of
// each conversation, the latest first.
function conversations() {
  const rows = new Map();
  for (const m of [...messages.values()].sort((a, b) => b.id - a.id)) {
    const key = keyOf(m.where);
    const row = rows.get(key);
    if (!row) rows.set(key, { key, last: m, where: m.where, senders: [m.sender] });
    else if (!row.senders.includes(m.sender)) row.senders.push(m.sender);
  }
  return [...rows.values()].filter((r) => !hidden(r.where));
}

// relativeTime is Zulip's timerender.relative_time_string_from_date.
function relativeTime(seconds) {
  const date = new Date(seconds * 1000);
  const now = new Date();
  const minutes = Math.floor((now - date) / 60_000);
  if (minutes <= 2) return 'Just now';
  if (minutes < 60) return `${minutes} minutes ago`;
  const hours = Math.floor(minutes / 60);
  const days = Math.round((new Date(now.toDateString()) - new Date(date.toDateString())) / 86_400_000);
  if (hours < 24) return hours === 1 ? 'An hour ago' : `${hours} hours ago`;
  if (days === 1) return 'Yesterday';
  if (days < 90) return `${days} days ago`;
  const opts = { month: 'short', day: 'numeric' };
  if (days >= 365 || date.getFullYear() !== now.getFullYear()) opts.year = 'numeric';
  return date.toLocaleDateString([], opts);
}

// participants are Zulip's avatars, the latest sender first, and +N
// for the rest with their names (ten of them) in its tooltip.
function participants(senders) {
  const muted = new Set((state.registered?.muted_users || []).map((u) => u.id));
  const extra = senders.slice(maxAvatars);
  const names = extra.slice(0, maxExtraSenders).map(userName);
  if (extra.length > maxExtraSenders) {
    const rest = extra.length - maxExtraSenders;
    names.push(`and ${rest === 1 ? '1 other' : `${rest} others`}.`);
  }
  return el('ul', { class: 'participants' },
    senders.slice(0, maxAvatars).map((id) => el('li', {}, muted.has(id)
      ? el('span', { class: 'avatar muted-user', role: 'img', 'aria-label': 'Muted user', title: 'Muted user', text: '?' })
      : el('img', { class: 'avatar', src: state.users.get(id)?.avatar_url || undefined, alt: userName(id), title: userName(id), width: 24, height: 24 }))),
    extra.length ? el('li', { class: 'overflow', title: names.join('\n'), text: `+${extra.length}` }) : null);
}

function unreadCounts() {
  const counts = new Map();
  for (const w of state.unread.values()) {
    const key = keyOf(w);
    counts.set(key, (counts.get(key) || 0) + 1);
  }
  return counts;
}

// markRead is the unread count's button: Zulip's "Mark as read".
async function markRead(w, onError) {
  try {
    if (w.dm === undefined) await api('POST', '/mark_topic_as_read', { stream_id: String(w.channel), topic_name: w.topic });
    else await api('POST', '/messages/flags', { op: 'add', flag: 'read', messages: [...state.unread].filter(([, u]) => u.dm === w.dm).map(([id]) => id) });
  } catch (err) {
    onError(err);
  }
}

function row(r, count, { narrow, onError }) {
  const w = r.where;
  const n = w.dm === undefined ? { kind: 'topic', channel: w.channel, topic: w.topic } : { kind: 'dm', key: w.dm };
  const href = hashOf(n);
  const when = new Date(r.last.timestamp * 1000);
  const names = w.dm?.split(',').map(userName).sort((a, b) => a.localeCompare(b)).join(', ');
  const tr = el('tr', { class: count ? 'unread' : null, dataset: { key: r.key },
    onclick: (e) => { if (!e.target.closest('a, button')) narrow(n); } },
  el('td', { class: 'where' }, el('a', { href, text: w.dm === undefined ? state.channels.get(w.channel).name : 'Direct messages' })),
  el('td', { class: 'topic' }, el('div', {},
    el('a', { class: 'open' + (w.topic === '' ? ' empty-topic' : ''), href, text: names ?? topicName(w.topic) }),
    count ? el('button', { type: 'button', class: 'badge', title: 'Mark as read', onclick: () => markRead(w, onError) },
      String(count), el('span', { class: 'sr', text: ' unread' })) : null)),
  el('td', { class: 'people' }, participants(r.senders)),
  el('td', { class: 'time' }, el('a', { href: hashOf(n, r.last.id), title: `${when.toLocaleDateString()} at ${when.toLocaleTimeString()}`, text: relativeTime(r.last.timestamp) })));
  if (w.dm === undefined) tr.style.setProperty('--channel', state.channels.get(w.channel).color || '');
  return tr;
}

// render draws the table in root, keeping the keyboard's place in it.
export function render(root, ctx) {
  drawn = { root, narrow: ctx.narrow, onError: ctx.onError };
  if (!loaded && !loading) load(false);
  const focus = document.activeElement;
  const focusRow = root.contains(focus) ? focus.closest('tr') : null;
  const place = focusRow && [focusRow.dataset.key, [...focusRow.querySelectorAll('a, button')].indexOf(focus)];
  const counts = unreadCounts();
  const rows = conversations().map((r) => row(r, counts.get(r.key) || 0, drawn));
  const oldest = Math.min(...messages.keys());
  root.replaceChildren(...[
    el('table', { class: 'grid', 'aria-labelledby': 'narrow-title', 'aria-busy': loading ? 'true' : null },
      el('thead', {}, el('tr', {}, ['Channel', 'Topic', 'Participants', 'Time'].map((h) => el('th', { scope: 'col', text: h })))),
      el('tbody', {}, rows)),
    !rows.length && !loading ? el('p', { class: 'empty', text: 'No conversations match your filters.' }) : null,
    loading ? el('p', { class: 'more', text: 'This view is still loading messages.' }) : null,
    !loading && loaded && !foundOldest && messages.size ? el('p', { class: 'more' },
      `Showing messages since ${new Date(messages.get(oldest).timestamp * 1000).toLocaleString([], { weekday: 'long', year: 'numeric', month: 'long', day: 'numeric', hour: 'numeric', minute: '2-digit' })}. `,
      el('button', { type: 'button', text: 'Load more', onclick: () => load(true) })) : null,
  ].filter(Boolean));
  if (place) {
    const tr = [...root.querySelectorAll('tbody tr')].find((x) => x.dataset.key === place[0]);
    (tr?.querySelectorAll('a, button')[place[1]] || tr?.querySelector('.open'))?.focus();
  }
}

// The times say "5 minutes ago": they are drawn again each minute.
setInterval(() => { if (drawn && !drawn.root.hidden) render(drawn.root, drawn); }, 60_000);

// focusNext moves the keyboard's place by one row (j/k, as in Zulip's
// table), onto the row's conversation, which Enter opens.
export function focusNext(step) {
  moveFocus([...(drawn?.root.querySelectorAll('tbody .open') || [])], step, (a) => a.closest('tr'));
}
