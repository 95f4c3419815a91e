// narrow_view.js: the message list of one narrow, newest at the bottom,
// older pages loaded on scroll, messages seen on screen marked read.

import { api } from './api.js';
import { el, serverHTML, emojiChar, timeText } from './dom.js';
import { widgetOf, renderWidget } from './widgets.js';
import { state, narrowFilter, inNarrow, userName, dmTitle, messageDMKey } from './state.js';

const pageSize = 50;
const quickEmoji = [['+1', '1f44d'], ['heart', '2764'], ['smile', '1f642'], ['tada', '1f389'], ['eyes', '1f440']];

export class NarrowView {
  constructor(list, { onRead, onError, onEdit }) {
    this.list = list;
    this.onRead = onRead;
    this.onError = onError;
    this.onEdit = onEdit;
    this.byID = new Map(); // id → {message, node}
    this.foundOldest = false;
    this.loading = false;
    this.generation = 0;
    this.toMark = new Set();
    this.seen = new IntersectionObserver((entries) => this.onSeen(entries), { root: list, threshold: 0.5 });
    list.addEventListener('scroll', () => {
      if (list.scrollTop < 150) this.loadOlder();
    });
    document.addEventListener('visibilitychange', () => this.markVisible());
  }

  async fetch(params) {
    return api('GET', '/messages', { narrow: narrowFilter(state.narrow), apply_markdown: 'true', client_gravatar: 'false', ...params });
  }

  // latestPage asks for the narrow's newest page; start() asks for the
  // first one while the page registers, so that both travel at once.
  latestPage() {
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
      for (const m of page.messages) this.append(m);
      if (!page.messages.length) this.list.append(el('p', { class: 'empty', text: 'No messages here yet.' }));
      this.list.scrollTop = this.list.scrollHeight;
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
    if (!ids.length) return this.open();
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
    } catch (err) {
      this.onError(err);
    } finally {
      this.loading = false;
    }
  }

  atBottom() {
    return this.list.scrollHeight - this.list.scrollTop - this.list.clientHeight < 80;
  }

  // add shows a new message when it belongs to the narrow.
  add(m) {
    if (!inNarrow(m) || this.byID.has(m.id)) return;
    const stick = this.atBottom() || m.sender_id === state.me.user_id;
    this.list.querySelector('.empty')?.remove();
    this.append(m);
    if (stick) this.list.scrollTop = this.list.scrollHeight;
  }

  append(m) {
    this.list.append(this.render(m));
  }

  render(m) {
    const mine = m.sender_id === state.me.user_id;
    const where = m.type === 'stream'
      ? `#${state.channels.get(m.stream_id)?.name ?? m.display_recipient} › ${m.subject}`
      : `Direct: ${dmTitle(messageDMKey(m))}`;
    const content = this.content(m);
    const reactions = el('div', { class: 'reactions', 'aria-label': 'Reactions' });
    const node = el('article', { class: 'msg' + (mine ? ' mine' : ''), tabindex: '-1', dataset: { id: m.id }, 'aria-label': `${m.sender_full_name}: message` },
      el('header', {},
        el('strong', { class: 'sender', text: m.sender_full_name }),
        el('span', { class: 'where', text: state.narrow.kind === 'topic' ? '' : where }),
        el('time', { datetime: new Date(m.timestamp * 1000).toISOString(), text: timeText(m.timestamp) }),
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

  // content is a message's rendering, or its poll or to-do list in its
  // place, as Zulip's web app shows a widget (widgets.js).
  content(m) {
    const w = widgetOf(m);
    return w ? el('div', { class: 'content' }, renderWidget(m, w, this.onError)) : serverHTML(el('div', { class: 'content' }), m.content);
  }

  // submessage adds a vote, an option or a tick to its message's widget.
  submessage(e) {
    const entry = this.byID.get(e.message_id);
    if (!entry) return;
    const m = entry.message;
    m.submessages = [...(m.submessages || []), { id: e.submessage_id, message_id: e.message_id, sender_id: e.sender_id, msg_type: e.msg_type, content: e.content }];
    entry.node.querySelector('.content').replaceWith(this.content(m));
  }

  picker(m, button) {
    const existing = button.parentNode.querySelector('.picker');
    if (existing) return existing.remove();
    const picker = el('span', { class: 'picker', role: 'group', 'aria-label': 'Pick a reaction' },
      quickEmoji.map(([name, code]) => el('button', { type: 'button', 'aria-label': name, text: emojiChar(code), onclick: () => {
        picker.remove();
        this.toggleReaction(m, name, code);
      } })));
    button.after(picker);
    picker.querySelector('button').focus();
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
      const label = `${g.name}: ${g.users.map(userName).join(', ')}`;
      return el('button', { type: 'button', class: 'reaction' + (mine ? ' mine' : ''), 'aria-pressed': String(mine), title: label, 'aria-label': label,
        onclick: () => this.toggleReaction(entry.message, g.name, g.code) },
      g.type === 'unicode_emoji' ? emojiChar(g.code) : `:${g.name}:`, ' ', el('span', { class: 'count', text: String(g.users.length) }));
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
