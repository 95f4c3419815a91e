// app.js: boots the page (session or login form), keeps the sidebar and
// its unread counts, and routes events to the views.

import { api, login, logout, session } from './api.js';
import { $, el, moveFocus } from './dom.js';
import { EventLoop } from './events.js';
import { NarrowView } from './narrow_view.js';
import { Compose, typingText } from './compose.js';
import { bindKeys } from './keys.js';
import { state, dmKey, dmTitle, inNarrow, messageDMKey, noteDM, noteTopic, topicName, unreadWhere } from './state.js';
import { hashOf, narrowOf } from './hash.js';

let loop = null;
let view = null;
let compose = null;
let recent = null; // recent_view.js, once Recent conversations was opened
const typers = new Map(); // sender id → {where, expires}
const topicsLoaded = new Set(); // channels whose topics were asked for since registering

function showError(err) {
  $('compose-error').textContent = err.message || String(err);
}

// realmTitle names the organisation on the login page and in the
// window's title, from server_settings as Zulip's login page does.
async function realmTitle() {
  try {
    const r = await fetch('/api/v1/server_settings', { credentials: 'omit' });
    const body = await r.json();
    if (body.realm_name) state.realmName = body.realm_name;
  } catch {
    // the page still works under zulite's name
  }
  $('login-title').textContent = `Log in to ${state.realmName}`;
}

async function boot() {
  const titled = realmTitle();
  try {
    state.me = await session();
  } catch {
    await titled;
    showLogin();
    return;
  }
  titled.then(renderTitle);
  start();
}

function showLogin() {
  $('app-view').hidden = true;
  $('login-view').hidden = false;
  const again = sessionStorage.getItem('zulite-relogin');
  sessionStorage.removeItem('zulite-relogin');
  if (again) {
    // The person changed their password on the settings page.
    $('login-email').value = again;
    $('login-note').textContent = 'Your password is changed. Log in again with the new one.';
    $('login-password').focus();
  } else {
    $('login-email').focus();
  }
}

$('login-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  $('login-error').textContent = '';
  $('login-note').textContent = '';
  try {
    state.me = await login($('login-email').value, $('login-password').value);
    $('login-password').value = '';
    start();
  } catch (err) {
    $('login-error').textContent = err.message;
  }
});

$('logout').addEventListener('click', async () => {
  loop?.stop();
  try {
    await logout();
  } finally {
    location.reload();
  }
});

function start() {
  $('login-view').hidden = true;
  $('app-view').hidden = false;
  view = new NarrowView($('messages'), { onRead: markRead, onError: showError, onEdit: (m) => compose.edit(m) });
  compose = new Compose({ onError: showError });
  ({ narrow: state.narrow, near: state.near } = narrowOf(location.hash));
  let first = view.latestPage();
  first.catch(() => {}); // open() reports it
  loop = new EventLoop({
    onState: async (s) => {
      loadState(s);
      if (first) {
        show(state.narrow, state.near, first);
        first = null;
      } else {
        await view.catchUp();
      }
    },
    onEvent,
    onStatus: (status) => {
      $('connection').textContent = status === 'reconnecting' ? 'Reconnecting…' : '';
      if (status === 'logged-out') location.reload();
    },
  });
  loop.run();
  bindKeys({
    compose: () => compose.open('channel'),
    directMessage: () => compose.open('dm'),
    next: () => focusNext(1),
    previous: () => focusNext(-1),
    nextUnread,
    escape: (typing) => {
      compose.cancel();
      closeMenu();
      // Inbox and Recent conversations hide the message list: the
      // keyboard goes back to their rows, as Zulip's Esc does there.
      // Settings close, as Zulip's overlay does: back to the view before
      // (from a field being typed in, the first Esc only leaves it).
      if (state.narrow.kind === 'recent') recent?.focusNext(0);
      else if (state.narrow.kind === 'inbox') {
        if (!$('inbox').contains(document.activeElement)) $('inbox').querySelector('a')?.focus();
      } else if (state.narrow.kind === 'settings') {
        if (typing) document.activeElement.blur();
        else narrow(beforeSettings);
      } else if (!$('messages').hidden) $('messages').focus();
    },
  });
  setInterval(reportPresence, 50_000);
  reportPresence();
  setInterval(renderTyping, 2000);
}

function loadState(s) {
  state.registered = s;
  recent?.reset();
  state.isAdmin = !!(s.is_admin || s.is_owner);
  state.emptyTopicName = s.realm_empty_topic_display_name ?? state.emptyTopicName;
  state.mandatoryTopics = !!s.realm_mandatory_topics;
  topicsLoaded.clear();
  state.users.clear();
  for (const u of s.realm_users) state.users.set(u.user_id, u);
  state.channels.clear();
  for (const sub of s.subscriptions) state.channels.set(sub.stream_id, sub);
  state.joinable.clear();
  for (const c of [...(s.never_subscribed || []), ...(s.unsubscribed || [])]) state.joinable.set(c.stream_id, c);
  state.unread.clear();
  const u = s.unread_msgs || {};
  for (const t of u.streams || []) {
    noteTopic(t.stream_id, t.topic, Math.max(...t.unread_message_ids));
    for (const id of t.unread_message_ids) state.unread.set(id, { channel: t.stream_id, topic: t.topic });
  }
  for (const p of u.pms || []) {
    const key = dmKey([p.other_user_id ?? p.sender_id]);
    for (const id of p.unread_message_ids) state.unread.set(id, { dm: key });
    noteDM(key, Math.max(...p.unread_message_ids));
  }
  for (const h of u.huddles || []) {
    const key = dmKey(h.user_ids_string.split(','));
    for (const id of h.unread_message_ids) state.unread.set(id, { dm: key });
    noteDM(key, Math.max(...h.unread_message_ids));
  }
  for (const c of s.recent_private_conversations || []) noteDM(dmKey(c.user_ids.length ? c.user_ids : [state.me.user_id]), c.max_message_id);
  loadPresence(s.presences, s.server_timestamp);
  compose.fill();
  renderSidebar();
}

function loadPresence(presences, serverTime) {
  if (!presences) return;
  const skew = Date.now() - (serverTime ? serverTime * 1000 : Date.now());
  for (const [id, p] of Object.entries(presences)) {
    const active = p.active_timestamp ?? Math.max(0, ...Object.values(p).map((c) => (c && c.status === 'active' ? c.timestamp : 0)));
    if (active) state.active.set(Number(id), active * 1000 + skew);
  }
}

async function reportPresence() {
  try {
    const r = await api('POST', '/users/me/presence', { status: 'active', new_user_input: 'true', slim_presence: 'true' });
    loadPresence(r.presences, r.server_timestamp);
    renderPeople();
  } catch {
    // the event loop shows the connection's state
  }
}

function isPresent(id) {
  return id === state.me.user_id || Date.now() - (state.active.get(id) || 0) < 140_000;
}

function unreadCount(test) {
  let n = 0;
  for (const w of state.unread.values()) if (test(w)) n++;
  return n;
}

function badge(n) {
  // The count is seen; a screen reader hears "3 unread".
  return n ? [el('span', { class: 'badge', 'aria-hidden': 'true', text: String(n) }), el('span', { class: 'sr', text: ` ${n} unread` })] : null;
}

function navItem(label, n, current, onclick, extra) {
  return el('li', {}, el('button', { type: 'button', class: 'nav' + (current ? ' current' : ''), 'aria-current': current ? 'page' : null, onclick },
    el('span', { class: 'label', text: label }), badge(n)), extra);
}

function renderSidebar() {
  const n = state.narrow;
  // Pinned channels first, then the rest, each by name; a muted one is
  // dimmed, as in Zulip's left sidebar.
  const muted = new Set((state.registered?.user_topics || []).filter((t) => t.visibility_policy === 1).map((t) => `${t.stream_id}\n${t.topic_name.toLowerCase()}`));
  const channels = [...state.channels.values()].sort((a, b) => (b.pin_to_top ? 1 : 0) - (a.pin_to_top ? 1 : 0) || a.name.localeCompare(b.name));
  $('channels').replaceChildren(
    navItem('Inbox', state.unread.size, n.kind === 'inbox', () => narrow({ kind: 'inbox' })),
    navItem('Recent conversations', 0, n.kind === 'recent', () => narrow({ kind: 'recent' })),
    navItem('All messages', state.unread.size, n.kind === 'all', () => narrow({ kind: 'all' })),
    ...channels.map((c) => {
      const open = (n.kind === 'channel' || n.kind === 'topic') && n.channel === c.stream_id;
      const topics = open ? el('ul', { class: 'topics' }, [...(state.topics.get(c.stream_id)?.values() || [])]
        .sort((a, b) => b.maxID - a.maxID).slice(0, 30)
        .map((t) => {
          const item = navItem(topicName(t.name), unreadCount((w) => w.channel === c.stream_id && w.topic.toLowerCase() === t.name.toLowerCase()),
            n.kind === 'topic' && n.topic.toLowerCase() === t.name.toLowerCase(), () => narrow({ kind: 'topic', channel: c.stream_id, topic: t.name }));
          item.classList.toggle('muted-topic', muted.has(`${c.stream_id}\n${t.name.toLowerCase()}`));
          return item;
        })) : null;
      // A channel's count leaves its muted topics out, as Zulip's does.
      const li = navItem(`#${c.name}`, unreadCount((w) => w.channel === c.stream_id && !muted.has(`${c.stream_id}\n${w.topic.toLowerCase()}`)), n.kind === 'channel' && n.channel === c.stream_id,
        () => narrow({ kind: 'channel', channel: c.stream_id }), topics);
      li.dataset.channel = c.name;
      if (c.color) li.style.setProperty('--channel', c.color);
      li.classList.toggle('muted-channel', !!c.is_muted);
      li.classList.toggle('pinned', !!c.pin_to_top);
      return li;
    }));
  $('joinable').replaceChildren(...[...state.joinable.values()].filter((c) => !state.channels.has(c.stream_id))
    .sort((a, b) => a.name.localeCompare(b.name))
    .map((c) => el('li', { class: 'join', dataset: { channel: c.name } }, el('span', { class: 'label', text: `#${c.name}` }),
      el('button', { type: 'button', 'aria-label': `Join #${c.name}`, text: 'Join', onclick: () => join(c.name) }))));
  $('dms').replaceChildren(...[...state.dms.entries()].sort((a, b) => b[1].maxID - a[1].maxID)
    .map(([key]) => navItem(dmTitle(key), unreadCount((w) => w.dm === key), n.kind === 'dm' && n.key === key, () => narrow({ kind: 'dm', key }))));
  renderPeople();
  renderTitle();
  if (n.kind === 'inbox') renderInbox();
  if (n.kind === 'recent') renderRecent();
}

function fitsNarrow(w, n) {
  if (n.kind === 'all') return true;
  if (w.channel !== n.channel) return false;
  return n.kind === 'channel' || w.topic.toLowerCase() === n.topic.toLowerCase();
}

// markNarrowRead marks the channel, topic or everything on screen read
// with Zulip's routes for it; the events bring the counts down.
$('mark-read').addEventListener('click', async () => {
  const n = state.narrow;
  try {
    if (n.kind === 'all') await api('POST', '/mark_all_as_read');
    else if (n.kind === 'channel') await api('POST', '/mark_stream_as_read', { stream_id: String(n.channel) });
    else if (n.kind === 'topic') await api('POST', '/mark_topic_as_read', { stream_id: String(n.channel), topic_name: n.topic });
  } catch (err) {
    showError(err);
  }
});

function renderPeople() {
  const people = [...state.users.values()].filter((u) => u.is_active !== false && !u.is_bot).sort((a, b) => a.full_name.localeCompare(b.full_name));
  $('people').replaceChildren(...people.map((u) => {
    const present = isPresent(u.user_id);
    return el('li', {}, el('button', { type: 'button', class: 'nav person', onclick: () => narrow({ kind: 'dm', key: dmKey([u.user_id]) }) },
      el('span', { class: 'dot' + (present ? ' present' : ''), 'aria-hidden': 'true' }),
      el('span', { class: 'label', text: u.full_name }),
      el('span', { class: 'sr', text: present ? ' (active)' : ' (away)' })));
  }));
}

function renderTitle() {
  const n = state.narrow;
  const name = (id) => state.channels.get(id)?.name ?? id;
  $('narrow-title').textContent = {
    all: () => 'All messages',
    channel: () => `#${name(n.channel)}`,
    topic: () => `#${name(n.channel)} › ${topicName(n.topic)}`,
    dm: () => dmTitle(n.key),
    search: () => `Search: ${n.text}`,
    inbox: () => 'Inbox',
    recent: () => 'Recent conversations',
    settings: () => (n.tab.startsWith('organization') ? 'Organization settings' : 'Personal settings'),
  }[n.kind]();
  document.title = `${$('narrow-title').textContent} · ${state.realmName}`;
  const visibility = $('topic-visibility');
  visibility.hidden = n.kind !== 'topic';
  if (n.kind === 'topic') visibility.value = String(topicVisibility(n.channel, n.topic));
  $('mark-read').hidden = !(['all', 'channel', 'topic'].includes(n.kind) && unreadCount((w) => fitsNarrow(w, n)));
}

// narrow goes to a narrow by its URL: the hash changes, and Back, a
// reload or a pasted link come back through show.
function narrow(n) {
  const hash = hashOf(n);
  if (location.hash === hash) show(n, 0);
  else location.hash = hash;
}

window.addEventListener('hashchange', () => {
  const { narrow: n, near } = narrowOf(location.hash);
  show(n, near);
});

// beforeSettings is the view settings were opened from, where Esc goes.
let beforeSettings = { kind: 'inbox' };

// focusNext moves the keyboard's place by one (j/k): a message, or a
// row of Inbox or Recent conversations.
function focusNext(step) {
  if (state.narrow.kind === 'recent') recent?.focusNext(step);
  else if (state.narrow.kind === 'inbox') moveFocus([...$('inbox').querySelectorAll('a')], step);
  else view.focusNext(step);
}

async function show(n, near, prefetched) {
  if (n.kind === 'settings' && state.narrow?.kind !== 'settings' && state.narrow) beforeSettings = state.narrow;
  state.narrow = n;
  state.near = near;
  closeMenu();
  const listed = !['inbox', 'recent', 'settings'].includes(n.kind);
  $('messages').hidden = !listed;
  $('typing').hidden = !listed;
  $('inbox').hidden = n.kind !== 'inbox';
  $('recent').hidden = n.kind !== 'recent';
  $('settings-view').hidden = n.kind !== 'settings';
  $('compose').hidden = n.kind === 'settings';
  if (n.kind !== 'settings') {
    const elsewhere = composeTarget(n) !== compose.to.value || (n.kind === 'topic' && n.topic.toLowerCase() !== compose.topic.value.trim().toLowerCase());
    if (composeTarget(n) !== null && elsewhere) compose.saveDraft();
    compose.follow(n);
  }
  if ((n.kind === 'channel' || n.kind === 'topic') && !topicsLoaded.has(n.channel)) loadTopics(n.channel);
  renderSidebar();
  if (n.kind === 'inbox') renderInbox();
  if (n.kind === 'settings') return openSettings(n.tab);
  if (!listed) return;
  await view.open(prefetched);
  renderTyping();
}

// composeTarget is where a narrow points the compose box, or null for
// a narrow that leaves it where it is.
function composeTarget(n) {
  return { channel: `c:${n.channel}`, topic: `c:${n.channel}`, dm: `d:${n.key}` }[n.kind] ?? null;
}

// openSettings draws a settings page; its module is loaded on first use.
async function openSettings(tab) {
  try {
    const { renderSettings } = await import('./settings.js');
    if (state.narrow.kind === 'settings' && state.narrow.tab === tab) renderSettings($('settings-view'), tab, { narrow, restore });
  } catch (err) {
    $('settings-view').replaceChildren(el('p', { class: 'error', role: 'alert', text: err.message }));
  }
}

// restore opens a draft's conversation with the draft in the box.
function restore(d) {
  const key = d.type === 'stream' ? null : dmKey(d.to.length ? d.to : [state.me.user_id]);
  narrow(d.type === 'stream' ? (d.topic !== undefined ? { kind: 'topic', channel: d.to[0], topic: d.topic } : { kind: 'channel', channel: d.to[0] }) : { kind: 'dm', key });
  compose.restore(d);
}

// topicVisibility is the user's visibility_policy for a topic (0 when
// none is set), from register's user_topics and the events after it.
function topicVisibility(channel, topic) {
  const t = (state.registered?.user_topics || []).find((x) => x.stream_id === channel && x.topic_name.toLowerCase() === topic.toLowerCase());
  return t ? t.visibility_policy : 0;
}

$('topic-visibility').addEventListener('change', async (e) => {
  const n = state.narrow;
  try {
    await api('POST', '/user_topics', { stream_id: String(n.channel), topic: n.topic, visibility_policy: e.target.value });
  } catch (err) {
    showError(err);
    renderTitle();
  }
});

// renderInbox is Zulip's Inbox: every conversation with unread
// messages, direct ones first, then each channel's topics, with counts;
// a row opens its conversation.
function renderInbox() {
  const dms = new Map();
  const channels = new Map();
  for (const [id, w] of state.unread) {
    if (w.dm) {
      const d = dms.get(w.dm) || { count: 0, maxID: 0 };
      d.count++;
      d.maxID = Math.max(d.maxID, id);
      dms.set(w.dm, d);
      continue;
    }
    const c = channels.get(w.channel) || { count: 0, maxID: 0, topics: new Map() };
    const key = w.topic.toLowerCase();
    const t = c.topics.get(key) || { name: w.topic, count: 0, maxID: 0 };
    t.count++;
    t.maxID = Math.max(t.maxID, id);
    c.topics.set(key, t);
    c.count++;
    c.maxID = Math.max(c.maxID, id);
    channels.set(w.channel, c);
  }
  const row = (label, count, n, cls) => el('li', { class: cls }, el('a', { class: 'nav', href: hashOf(n) },
    el('span', { class: 'label', text: label }), badge(count)));
  const folder = (title, count, rows, color) => {
    const head = el('h2', {}, el('span', { class: 'label', text: title }), badge(count));
    if (color) head.style.setProperty('--channel', color);
    return el('section', { class: 'folder', 'aria-label': title }, head, el('ul', { class: 'list' }, rows));
  };
  const sections = [];
  if (dms.size) {
    sections.push(folder('Direct messages', [...dms.values()].reduce((a, d) => a + d.count, 0),
      [...dms.entries()].sort((a, b) => b[1].maxID - a[1].maxID).map(([key, d]) => row(dmTitle(key), d.count, { kind: 'dm', key }))));
  }
  for (const [id, c] of [...channels.entries()].sort((a, b) => b[1].maxID - a[1].maxID)) {
    const sub = state.channels.get(id);
    sections.push(folder(`#${sub?.name ?? id}`, c.count,
      [...c.topics.values()].sort((a, b) => b.maxID - a.maxID).map((t) => row(topicName(t.name), t.count, { kind: 'topic', channel: id, topic: t.name }, t.name === '' ? 'empty-topic' : '')),
      sub?.color));
  }
  $('inbox').replaceChildren(...(sections.length ? sections : [el('p', { class: 'empty', text: 'There are no unread messages in your inbox.' })]));
}

// renderRecent draws Recent conversations; its module is loaded on
// first use and from then on follows the messages as they come.
async function renderRecent() {
  try {
    recent = await import('./recent_view.js');
    if (state.narrow.kind === 'recent') recent.render($('recent'), { narrow, onError: showError });
  } catch (err) {
    $('recent').replaceChildren(el('p', { class: 'error', role: 'alert', text: err.message }));
  }
}

async function join(name) {
  try {
    await api('POST', '/users/me/subscriptions', { subscriptions: [{ name }] });
  } catch (err) {
    showError(err);
  }
}

// loadTopics asks for a channel's topics once a registration, so that
// older ones than the page has seen can be opened from the sidebar.
async function loadTopics(channel) {
  topicsLoaded.add(channel);
  try {
    const r = await api('GET', `/users/me/${channel}/topics`, { allow_empty_topic_name: 'true' });
    for (const t of r.topics) noteTopic(channel, t.name, t.max_id);
    renderSidebar();
  } catch (err) {
    topicsLoaded.delete(channel);
    showError(err);
  }
}

let pendingRead = new Set();
let readTimer = 0;
let readDue = 0;
let readFailures = 0;

// markRead marks what was seen, at once on the page and in one request,
// 200 ms after the last mark and a second after the first at most
// (Zulip's message_flags.send_read sends once a second at most); a
// request that fails is tried again, later each time, with what was seen
// meanwhile, so that no mark is lost. What waits when the page is hidden
// or left (a reload, a closed tab) goes then, in a request that outlives
// the page.
function markRead(ids) {
  for (const id of ids) {
    state.unread.delete(id);
    pendingRead.add(id);
  }
  view.markedRead(ids);
  renderSidebar();
  if (readFailures) return;
  readDue ||= Date.now() + 1000;
  sendReads(Math.min(200, readDue - Date.now()));
}

function sendReads(delay) {
  clearTimeout(readTimer);
  readTimer = setTimeout(() => flushReads(false), delay);
}

async function flushReads(keepalive) {
  clearTimeout(readTimer);
  readDue = 0;
  if (!pendingRead.size) return;
  const messages = [...pendingRead];
  pendingRead = new Set();
  try {
    await api('POST', '/messages/flags', { messages, op: 'add', flag: 'read' }, { keepalive });
    readFailures = 0;
    if (pendingRead.size) sendReads(200);
  } catch (err) {
    for (const id of messages) pendingRead.add(id);
    readFailures++;
    if (err.status !== 401) sendReads(Math.min(30_000, 500 * 2 ** readFailures));
  }
}

document.addEventListener('visibilitychange', () => document.hidden && flushReads(true));
addEventListener('pagehide', () => flushReads(true));

function nextUnread() {
  const seen = new Set();
  for (const [id, w] of [...state.unread.entries()].sort((a, b) => a[0] - b[0])) {
    if (w.channel === undefined) continue;
    const key = `${w.channel}\n${w.topic.toLowerCase()}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const n = state.narrow;
    if (n.kind === 'topic' && n.channel === w.channel && n.topic.toLowerCase() === w.topic.toLowerCase()) continue;
    return narrow({ kind: 'topic', channel: w.channel, topic: w.topic });
  }
  const dm = [...state.unread.values()].find((w) => w.dm);
  if (dm) narrow({ kind: 'dm', key: dm.dm });
}

function onEvent(e) {
  switch (e.type) {
    case 'message': {
      const m = e.message;
      m.flags = e.flags || [];
      if (m.type === 'stream') noteTopic(m.stream_id, m.subject, m.id);
      else {
        const isNew = !state.dms.has(messageDMKey(m));
        noteDM(messageDMKey(m), m.id);
        if (isNew) compose.fill();
      }
      if (!(e.flags || []).includes('read') && m.sender_id !== state.me.user_id) state.unread.set(m.id, unreadWhere(m));
      recent?.noteMessage(m);
      view.add(m);
      if (m.sender_id !== state.me.user_id) typers.delete(m.sender_id);
      renderSidebar();
      renderTyping();
      break;
    }
    case 'update_message_flags':
      if (e.flag !== 'read') break;
      if (e.op === 'add') {
        if (e.all) state.unread.clear();
        for (const id of e.messages) state.unread.delete(id);
        view.markedRead(e.all ? [...view.byID.keys()] : e.messages);
      } else {
        for (const id of e.messages) {
          const d = e.message_details?.[id];
          if (d) state.unread.set(id, d.type === 'stream' ? { channel: d.stream_id, topic: d.topic } : { dm: dmKey(d.user_ids || [d.sender_id]) });
        }
      }
      renderSidebar();
      break;
    case 'reaction':
      view.reaction(e);
      break;
    case 'submessage':
      view.submessage(e);
      break;
    case 'update_message':
      moved(e);
      view.updated(e);
      break;
    case 'delete_message': {
      const ids = e.message_ids || [e.message_id];
      for (const id of ids) state.unread.delete(id);
      recent?.deleted(ids);
      view.deleted(ids);
      renderSidebar();
      break;
    }
    case 'subscription':
      if (e.op === 'update' && state.channels.has(e.stream_id)) state.channels.get(e.stream_id)[e.property] = e.value;
      if (e.op === 'add') for (const sub of e.subscriptions) state.channels.set(sub.stream_id, sub);
      if (e.op === 'remove') {
        for (const sub of e.subscriptions) {
          state.joinable.set(sub.stream_id, state.channels.get(sub.stream_id) || sub);
          state.channels.delete(sub.stream_id);
        }
      }
      compose.fill();
      renderSidebar();
      settingsChanged();
      break;
    case 'stream':
      if (e.op === 'create') for (const c of e.streams) state.joinable.set(c.stream_id, c);
      if (e.op === 'delete') {
        // An archived channel leaves the sidebar, subscribed or not.
        for (const c of e.streams) {
          state.joinable.delete(c.stream_id);
          state.channels.delete(c.stream_id);
        }
      }
      if (e.op === 'update') {
        // A rename, a new description or a permission, from the
        // channel settings of this page or another.
        for (const map of [state.channels, state.joinable]) {
          const c = map.get(e.stream_id);
          if (c) c[e.property] = e.value;
          if (c && e.property === 'is_archived' && e.value) map.delete(e.stream_id);
        }
      }
      compose.fill();
      renderSidebar();
      break;
    case 'realm_user':
      if (e.op === 'add') state.users.set(e.person.user_id, e.person);
      else if (e.op === 'update' && state.users.has(e.person.user_id)) Object.assign(state.users.get(e.person.user_id), e.person);
      compose.fill();
      renderSidebar();
      settingsChanged();
      break;
    case 'typing': {
      const sender = e.sender.user_id;
      if (sender === state.me.user_id) break;
      if (e.op === 'start') typers.set(sender, { e, expires: Date.now() + 15_000 });
      else typers.delete(sender);
      renderTyping();
      break;
    }
    case 'user_topic': {
      const r = state.registered;
      r.user_topics = (r.user_topics || []).filter((t) => !(t.stream_id === e.stream_id && t.topic_name.toLowerCase() === e.topic_name.toLowerCase()));
      if (e.visibility_policy) r.user_topics.push(e);
      renderSidebar();
      settingsChanged();
      break;
    }
    case 'muted_users':
      state.registered.muted_users = e.muted_users;
      view.mutedChanged();
      settingsChanged();
      break;
    case 'alert_words':
      state.registered.alert_words = e.alert_words;
      settingsChanged();
      break;
    case 'user_group': // the User groups page reads them afresh
      settingsChanged();
      break;
    case 'drafts': // so does the Drafts page
      if (state.narrow.tab === 'settings/drafts') settingsChanged();
      break;
    case 'user_settings': // a channel's notifications follow them unless set
      (state.registered.user_settings ||= {})[e.property] = e.value;
      settingsChanged();
      break;
    case 'user_status': {
      const all = state.registered.user_status || (state.registered.user_status = {});
      const { type, id, user_id: userID, ...change } = e;
      all[userID] = { ...all[userID], ...change };
      settingsChanged();
      break;
    }
    case 'presence':
      if (e.presences) loadPresence(e.presences, Date.now() / 1000);
      else if (e.user_id) state.active.set(e.user_id, Date.now());
      renderPeople();
      break;
  }
}

// settingsChanged redraws a settings page on screen after an event
// changed what it shows (another tab's change included).
function settingsChanged() {
  if (state.narrow.kind === 'settings') openSettings(state.narrow.tab);
}

function renderTyping() {
  const here = [];
  for (const [id, t] of typers) {
    if (t.expires < Date.now()) {
      typers.delete(id);
      continue;
    }
    const e = t.e;
    const m = e.message_type === 'stream'
      ? { type: 'stream', stream_id: e.stream_id, subject: e.topic ?? '' }
      : { type: 'private', display_recipient: e.recipients.map((r) => ({ id: r.user_id })) };
    if (inNarrow(m)) here.push(id);
  }
  $('typing').textContent = typingText(here);
}

// moved follows a move to another topic or channel: the unread marks
// and the sidebar's topics go with the messages, and the view takes
// them out of or into the narrow on screen.
function moved(e) {
  if (e.orig_subject === undefined) return; // an edit of content only
  const channel = e.new_stream_id ?? e.stream_id;
  const topic = e.subject ?? e.orig_subject;
  for (const id of e.message_ids) if (state.unread.has(id)) state.unread.set(id, { channel, topic });
  noteTopic(channel, topic, Math.max(...e.message_ids));
  recent?.moved(e.message_ids, channel, topic);
  view.moved(e.message_ids, channel, topic);
  renderSidebar();
}

function closeMenu() {
  document.body.classList.remove('menu-open');
  $('menu-toggle').setAttribute('aria-expanded', 'false');
}

$('menu-toggle').addEventListener('click', () => {
  const open = document.body.classList.toggle('menu-open');
  $('menu-toggle').setAttribute('aria-expanded', String(open));
});

$('search-form').addEventListener('submit', (e) => {
  e.preventDefault();
  const text = $('search').value.trim();
  narrow(text ? { kind: 'search', text } : { kind: 'all' });
});

boot();
