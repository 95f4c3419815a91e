// narrow_view.js: the message list of one narrow, newest at the bottom,
// older pages loaded on scroll, messages seen on screen marked read.

import { api } from './api.js';
import { el, serverHTML, emojiChar, timeText, dayText } from './dom.js';
import { widgetOf, renderWidget } from './widgets.js';
import { state, narrowFilter, inNarrow, userName, dmTitle, messageDMKey, topicName } from './state.js';
import { hashOf } from './hash.js';

const pageSize = 50;

// conversationOf names a message's recipient bar: its channel and topic
// (topics match without case, as Zulip's do), or its direct conversation.
const isMuted = (id) => (state.registered?.muted_users || []).some((u) => u.id === id);

const conversationOf = (m) => (m.type === 'stream' ? `${m.stream_id}\n${m.subject.toLowerCase()}` : messageDMKey(m));

export class NarrowView {
  constructor(list, { onRead, onError, onEdit }) {
    this.list = list;
    this.onRead = onRead;
    this.onError = onError;
    this.onEdit = onEdit;
    this.byID = new Map(); // id → {message, node}
    this.foundOldest = false;
    this.foundNewest = true;
    this.loading = false;
    this.generation = 0;
    this.toMark = new Set();
    this.revealed = new Set(); // messages of muted senders shown on request
    this.seen = new IntersectionObserver((entries) => this.onSeen(entries), { root: list, threshold: 0.5 });
    list.addEventListener('scroll', () => {
      if (list.scrollTop < 150) this.loadOlder();
      if (!this.foundNewest && this.atBottom()) this.loadNewer();
    });
    document.addEventListener('visibilitychange', () => this.markVisible());
  }

  async fetch(params) {
    return api('GET', '/messages', { narrow: narrowFilter(state.narrow), apply_markdown: 'true', client_gravatar: 'false', allow_empty_topic_name: 'true', ...params });
  }

  // latestPage asks for the narrow's newest page, or the page around
  // the message a link points at; start() asks for the first one while
  // the page registers, so that both travel at once.
  latestPage() {
    if (state.near) return this.fetch({ anchor: String(state.near), num_before: String(pageSize / 2), num_after: String(pageSize / 2) });
    return this.fetch({ anchor: 'newest', num_before: String(pageSize), num_after: '0' });
  }

  async open(prefetched) {
    const generation = ++this.generation;
    this.list.replaceChildren();
    this.byID.clear();
    this.foundOldest = false;
    this.list.setAttribute('aria-busy', 'true');
    try {
      const page = await (prefetched || this.latestPage());
      if (generation !== this.generation) return;
      this.foundOldest = page.found_oldest;
      this.foundNewest = page.found_newest;
      for (const m of page.messages) this.append(m);
      if (!page.messages.length) this.list.append(el('p', { class: 'empty', text: 'No messages here yet.' }));
      this.numbered();
      this.list.scrollTop = this.list.scrollHeight;
      const near = this.byID.get(state.near)?.node;
      if (near) {
        near.classList.add('near');
        near.scrollIntoView({ block: 'center' });
        near.focus({ preventScroll: true });
      }
      performance.mark('zulite:first-message-list');
    } catch (err) {
      if (generation === this.generation) this.list.replaceChildren(el('p', { class: 'error', role: 'alert', text: err.message }));
    } finally {
      this.list.removeAttribute('aria-busy');
    }
  }

  // catchUp adds what arrived while the page was not listening (after a
  // drop or a restart of the server).
  async catchUp() {
    const ids = [...this.byID.keys()];
    if (!ids.length || !this.foundNewest) return this.open();
    let anchor = Math.max(...ids);
    for (;;) {
      const page = await this.fetch({ anchor: String(anchor), num_before: '0', num_after: '200', include_anchor: 'false' });
      for (const m of page.messages) this.add(m);
      if (page.found_newest || !page.messages.length) return;
      anchor = page.messages[page.messages.length - 1].id;
    }
  }

  async loadOlder() {
    if (this.loading || this.foundOldest || !this.byID.size) return;
    this.loading = true;
    const generation = this.generation;
    try {
      const oldest = Math.min(...this.byID.keys());
      const page = await this.fetch({ anchor: String(oldest), num_before: String(pageSize), num_after: '0', include_anchor: 'false' });
      if (generation !== this.generation) return;
      this.foundOldest = page.found_oldest;
      const before = this.list.scrollHeight;
      const first = this.list.firstChild;
      for (const m of page.messages) {
        if (!this.byID.has(m.id)) this.list.insertBefore(this.render(m), first);
      }
      this.list.scrollTop += this.list.scrollHeight - before;
      this.numbered();
    } catch (err) {
      this.onError(err);
    } finally {
      this.loading = false;
    }
  }

  // loadNewer fills in below a linked message, up to the newest.
  async loadNewer() {
    if (this.loading || this.foundNewest || !this.byID.size) return;
    this.loading = true;
    const generation = this.generation;
    try {
      const page = await this.fetch({ anchor: String(Math.max(...this.byID.keys())), num_before: '0', num_after: String(pageSize), include_anchor: 'false' });
      if (generation !== this.generation) return;
      this.foundNewest = page.found_newest;
      for (const m of page.messages) if (!this.byID.has(m.id)) this.append(m);
      this.numbered();
    } catch (err) {
      this.onError(err);
    } finally {
      this.loading = false;
    }
  }

  // numbered tells assistive technology each article's place in the
  // feed (WAI-ARIA's feed pattern): the set's size is -1 while older or
  // newer messages remain unloaded.
  numbered() {
    this.regroup();
    const nodes = this.list.querySelectorAll('.msg');
    const size = this.foundOldest && this.foundNewest ? String(nodes.length) : '-1';
    nodes.forEach((n, i) => {
      n.setAttribute('aria-posinset', String(i + 1));
      n.setAttribute('aria-setsize', size);
    });
  }

  atBottom() {
    return this.list.scrollHeight - this.list.scrollTop - this.list.clientHeight < 80;
  }

  // add shows a new message when it belongs to the narrow.
  add(m) {
    if (!inNarrow(m) || this.byID.has(m.id) || !this.foundNewest) return;
    const stick = this.atBottom() || m.sender_id === state.me.user_id;
    this.list.querySelector('.empty')?.remove();
    const ids = [...this.byID.keys()];
    const later = ids.filter((id) => id > m.id);
    if (later.length) this.list.insertBefore(this.render(m), this.byID.get(Math.min(...later)).node);
    else this.append(m);
    this.numbered();
    if (stick) this.list.scrollTop = this.list.scrollHeight;
  }

  // moved follows messages to another topic or channel: they leave a
  // narrow they no longer fit, and come into one they now fit.
  moved(ids, channel, topic) {
    for (const id of ids) {
      const entry = this.byID.get(id);
      if (!entry) continue;
      const m = entry.message;
      m.stream_id = channel;
      m.subject = topic;
      if (!inNarrow(m)) {
        entry.node.remove();
        this.byID.delete(id);
      } else {
        entry.node.replaceWith(this.render(m));
      }
    }
    if (inNarrow({ type: 'stream', stream_id: channel, subject: topic }) && ids.some((id) => !this.byID.has(id))) {
      this.fetch({ anchor: String(Math.min(...ids)), num_before: '0', num_after: String(Math.min(ids.length, 1000)) })
        .then((page) => { for (const m of page.messages) if (ids.includes(m.id)) this.add(m); })
        .catch((err) => this.onError(err));
    }
    this.numbered();
  }

  append(m) {
    this.list.append(this.render(m));
  }

  // render builds a message's article. Every article carries its
  // recipient bar, its date line and its sender's name and avatar;
  // regroup shows each once per run, as Zulip's message list does.
  render(m) {
    const mine = m.sender_id === state.me.user_id;
    const content = this.content(m);
    const reactions = el('div', { class: 'reactions', role: 'group', 'aria-label': 'Reactions' });
    const home = m.type === 'stream' ? { kind: 'topic', channel: m.stream_id, topic: m.subject } : { kind: 'dm', key: messageDMKey(m) };
    const mentioned = (m.flags || []).some((f) => f.endsWith('mentioned'));
    const iso = new Date(m.timestamp * 1000).toISOString();
    const node = el('article', { class: 'msg' + (mine ? ' mine' : '') + (mentioned ? ' mentioned' : ''), tabindex: '-1', dataset: { id: m.id },
      'aria-label': `${m.sender_full_name}${mentioned ? ', mentioning you' : ''}: message` },
      this.recipientBar(m, iso),
      el('div', { class: 'date-line', hidden: true }, el('time', { datetime: iso, text: dayText(m.timestamp) })),
      el('img', { class: 'avatar', src: m.avatar_url || undefined, alt: '', width: 36, height: 36, loading: 'lazy' }),
      el('header', {},
        el('strong', { class: 'sender', text: m.sender_full_name }),
        el('a', { class: 'permalink', href: hashOf(home, m.id), title: 'Link to this message' },
          el('time', { datetime: iso, text: timeText(m.timestamp) })),
        el('span', { class: 'actions' },
          el('button', { type: 'button', class: 'react', 'aria-label': 'Add a reaction', text: '☺+', onclick: (e) => this.picker(m, e.currentTarget) }),
          mine && el('button', { type: 'button', class: 'edit', text: 'Edit', onclick: () => this.onEdit(m) }),
          mine && el('button', { type: 'button', class: 'delete', text: 'Delete', onclick: () => this.remove(m) }))),
      content, reactions);
    const entry = { message: m, node };
    this.byID.set(m.id, entry);
    this.renderReactions(entry);
    if (state.unread.has(m.id)) {
      node.classList.add('unread');
      this.seen.observe(node);
    }
    return node;
  }

  // recipientBar is Zulip's: the channel (in its color) and topic, or
  // the people of a direct conversation, each a link to its narrow, and
  // the day on the right.
  recipientBar(m, iso) {
    const date = el('time', { class: 'bar-date', datetime: iso, text: dayText(m.timestamp) });
    if (m.type !== 'stream') {
      return el('div', { class: 'rbar dm' },
        el('a', { href: hashOf({ kind: 'dm', key: messageDMKey(m) }), text: `You and ${dmTitle(messageDMKey(m))}` }), date);
    }
    const channel = state.channels.get(m.stream_id);
    const bar = el('div', { class: 'rbar' },
      el('a', { class: 'rbar-channel', href: hashOf({ kind: 'channel', channel: m.stream_id }), text: `#${channel?.name ?? m.display_recipient}` }),
      el('span', { class: 'sep', 'aria-hidden': 'true', text: ' › ' }),
      el('a', { class: 'rbar-topic' + (m.subject === '' ? ' empty-topic' : ''), href: hashOf({ kind: 'topic', channel: m.stream_id, topic: m.subject }), text: topicName(m.subject) }),
      date);
    if (channel?.color) bar.style.setProperty('--channel', channel.color);
    return bar;
  }

  // regroup shows a recipient bar where the conversation changes, a
  // date line where the day changes within one, and the sender's name
  // and avatar where the sender changes: the rest of a run is content.
  regroup() {
    let prev = null;
    for (const node of this.list.querySelectorAll('.msg')) {
      const m = this.byID.get(Number(node.dataset.id))?.message;
      if (!m) continue;
      const newBar = !prev || conversationOf(prev) !== conversationOf(m);
      const newDay = !prev || dayText(prev.timestamp) !== dayText(m.timestamp);
      node.classList.toggle('first', newBar);
      node.querySelector('.rbar').hidden = !newBar;
      node.querySelector('.date-line').hidden = newBar || !newDay;
      node.classList.toggle('continued', !newBar && !newDay && prev.sender_id === m.sender_id);
      prev = m;
    }
  }

  // content is a message's rendering, or its poll or to-do list in its
  // place, as Zulip's web app shows a widget (widgets.js).
  content(m) {
    if (isMuted(m.sender_id) && !this.revealed.has(m.id)) {
      // Zulip's message_hidden_dialog: hidden until one asks to see it.
      return el('div', { class: 'content hidden-message' }, el('p', {}, el('em', {},
        'This message was hidden because you have muted the sender. ',
        el('button', { type: 'button', class: 'link', text: 'Click here to reveal.', onclick: () => {
          this.revealed.add(m.id);
          this.byID.get(m.id)?.node.querySelector('.content').replaceWith(this.content(m));
        } }))));
    }
    const w = widgetOf(m);
    return w ? el('div', { class: 'content' }, renderWidget(m, w, this.onError)) : serverHTML(el('div', { class: 'content' }), m.content);
  }

  // mutedChanged draws again the messages of people muted or unmuted.
  mutedChanged() {
    for (const { message: m, node } of this.byID.values()) node.querySelector('.content').replaceWith(this.content(m));
  }

  // submessage adds a vote, an option or a tick to its message's widget.
  submessage(e) {
    const entry = this.byID.get(e.message_id);
    if (!entry) return;
    const m = entry.message;
    m.submessages = [...(m.submessages || []), { id: e.submessage_id, message_id: e.message_id, sender_id: e.sender_id, msg_type: e.msg_type, content: e.content }];
    entry.node.querySelector('.content').replaceWith(this.content(m));
  }

  // picker opens the emoji picker, a module of its own loaded on first
  // use so that the page's first load stays small.
  async picker(m, button) {
    try {
      const { openPicker } = await import('./emoji_picker.js');
      await openPicker(button, (name, code) => this.toggleReaction(m, name, code));
    } catch (err) {
      this.onError(err);
    }
  }

  async toggleReaction(m, name, code) {
    const mine = (m.reactions || []).some((r) => r.emoji_code === code && r.user_id === state.me.user_id);
    try {
      await api(mine ? 'DELETE' : 'POST', `/messages/${m.id}/reactions`, { emoji_name: name, emoji_code: code, reaction_type: 'unicode_emoji' });
    } catch (err) {
      this.onError(err);
    }
  }

  renderReactions(entry) {
    const box = entry.node.querySelector('.reactions');
    const groups = new Map();
    for (const r of entry.message.reactions || []) {
      const g = groups.get(r.emoji_code) || { name: r.emoji_name, code: r.emoji_code, type: r.reaction_type, users: [] };
      g.users.push(r.user_id ?? r.user?.id);
      groups.set(r.emoji_code, g);
    }
    box.replaceChildren(...[...groups.values()].map((g) => {
      const mine = g.users.includes(state.me.user_id);
      const who = `${g.name}: ${g.users.map(userName).join(', ')}`;
      const face = g.type === 'unicode_emoji' ? emojiChar(g.code) : `:${g.name}:`;
      // The name starts with what is seen (WCAG's label in name), then
      // says which emoji and who.
      return el('button', { type: 'button', class: 'reaction' + (mine ? ' mine' : ''), 'aria-pressed': String(mine), title: who,
        'aria-label': `${face} ${g.users.length} ${who}`, onclick: () => this.toggleReaction(entry.message, g.name, g.code) },
      face, ' ', el('span', { class: 'count', text: String(g.users.length) }));
    }));
  }

  reaction(e) {
    const entry = this.byID.get(e.message_id);
    if (!entry) return;
    const list = entry.message.reactions || (entry.message.reactions = []);
    const userID = e.user_id ?? e.user?.user_id;
    if (e.op === 'add') list.push({ emoji_name: e.emoji_name, emoji_code: e.emoji_code, reaction_type: e.reaction_type, user_id: userID });
    else entry.message.reactions = list.filter((r) => !(r.emoji_code === e.emoji_code && (r.user_id ?? r.user?.id) === userID));
    this.renderReactions(entry);
  }

  updated(e) {
    const entry = this.byID.get(e.message_id);
    if (!entry || e.rendered_content === undefined) return;
    entry.message.content = e.rendered_content;
    serverHTML(entry.node.querySelector('.content'), e.rendered_content);
    entry.node.classList.add('edited');
  }

  deleted(ids) {
    for (const id of ids) {
      const entry = this.byID.get(id);
      if (!entry) continue;
      entry.node.remove();
      this.byID.delete(id);
    }
    this.numbered();
  }

  async remove(m) {
    if (!confirm('Delete this message?')) return;
    try {
      await api('DELETE', `/messages/${m.id}`);
    } catch (err) {
      this.onError(err);
    }
  }

  markedRead(ids) {
    for (const id of ids) {
      const entry = this.byID.get(id);
      if (entry) {
        entry.node.classList.remove('unread');
        this.seen.unobserve(entry.node);
      }
    }
  }

  onSeen(entries) {
    for (const e of entries) {
      if (e.isIntersecting) this.toMark.add(Number(e.target.dataset.id));
      else this.toMark.delete(Number(e.target.dataset.id));
    }
    this.markVisible();
  }

  markVisible() {
    if (document.visibilityState !== 'visible' || !this.toMark.size) return;
    const ids = [...this.toMark].filter((id) => state.unread.has(id));
    this.toMark.clear();
    if (ids.length) this.onRead(ids);
  }

  // focusNext moves the keyboard's place by one message (j/k).
  focusNext(step) {
    const nodes = [...this.list.querySelectorAll('.msg')];
    if (!nodes.length) return;
    let i = nodes.indexOf(document.activeElement);
    i = i < 0 ? nodes.length - 1 : Math.max(0, Math.min(nodes.length - 1, i + step));
    nodes[i].focus();
    nodes[i].scrollIntoView({ block: 'nearest' });
  }
}
