// compose.js: the compose box. Enter sends, Shift+Enter breaks the line;
// @ and # open an autocomplete of people and channels; a pasted or
// dropped file is uploaded and linked; typing is told to the others.

import { api, upload } from './api.js';
import { el, $ } from './dom.js';
import { state, userName, dmTitle, dmKey } from './state.js';

export class Compose {
  constructor({ onError }) {
    this.onError = onError;
    this.form = $('compose');
    this.to = $('compose-to');
    this.topic = $('compose-topic');
    this.text = $('compose-text');
    this.box = $('autocomplete');
    this.errorLine = $('compose-error');
    this.people = $('compose-people');
    this.editing = null; // the message being edited
    this.draft = null; // what the box held before an edit began
    this.typingTo = null; // where "typing" went, so "stop" goes there too
    this.typingSent = 0;
    this.typingTimer = 0;
    this.choices = [];
    this.choice = 0;
    this.form.addEventListener('submit', (e) => {
      e.preventDefault();
      this.send();
    });
    this.to.addEventListener('change', () => this.showTopic());
    this.text.addEventListener('keydown', (e) => this.keydown(e));
    this.text.addEventListener('input', () => {
      this.autocomplete();
      this.typing();
    });
    this.text.addEventListener('paste', (e) => {
      const files = [...(e.clipboardData?.files || [])];
      if (files.length) {
        e.preventDefault();
        files.forEach((f) => this.attach(f));
      }
    });
    const main = $('main');
    main.addEventListener('dragover', (e) => e.preventDefault());
    main.addEventListener('drop', (e) => {
      e.preventDefault();
      [...(e.dataTransfer?.files || [])].forEach((f) => this.attach(f));
    });
    $('compose-file').addEventListener('change', (e) => {
      [...e.target.files].forEach((f) => this.attach(f));
      e.target.value = '';
    });
  }

  // fill lists the places a message can go: channels, people, the
  // group conversations one has had, and a new group. No person is
  // chosen for anyone: with no channel the box sends nowhere until they
  // or the narrow pick, and the first channel they join becomes the
  // default.
  fill() {
    const current = this.to.value;
    const channels = [...state.channels.values()].sort((a, b) => a.name.localeCompare(b.name));
    const people = [...state.users.values()].filter((u) => u.is_active !== false && !u.is_bot).sort((a, b) => a.full_name.localeCompare(b.full_name));
    const groups = [...state.dms.keys()].filter((k) => k.includes(','));
    this.to.replaceChildren(
      el('option', { value: '', text: 'Choose a channel or people' }),
      el('optgroup', { label: 'Channels' }, channels.map((c) => el('option', { value: `c:${c.stream_id}`, text: `#${c.name}` }))),
      el('optgroup', { label: 'Direct message' }, people.map((u) => el('option', { value: `d:${u.user_id}`, text: u.full_name })),
        groups.map((k) => el('option', { value: `d:${k}`, text: dmTitle(k) })),
        el('option', { value: 'g:', text: 'New group…' })));
    this.to.value = current;
    if (!this.to.value) this.to.value = channels.length ? `c:${channels[0].stream_id}` : '';
    this.showTopic();
  }

  showTopic() {
    this.topic.hidden = !this.to.value.startsWith('c:');
    this.people.hidden = this.to.value !== 'g:';
    this.topic.placeholder = state.mandatoryTopics ? 'Topic' : state.emptyTopicName;
  }

  // saveDraft keeps what the box holds as a draft on the server (POST
  // /drafts, Zulip's synced drafts) when the box is about to point
  // elsewhere, so that a half-written message is neither lost nor sent
  // to the wrong place; the Drafts page restores it.
  saveDraft() {
    const content = this.text.value.trim();
    const [kind, id] = this.to.value.split(':');
    if (!content || this.editing || !kind || kind === 'g') return;
    const draft = kind === 'c'
      ? { type: 'stream', to: [Number(id)], topic: this.topic.value.trim(), content, timestamp: Math.floor(Date.now() / 1000) }
      : { type: 'private', to: id.split(',').map(Number), topic: '', content, timestamp: Math.floor(Date.now() / 1000) };
    this.text.value = '';
    this.stopTyping();
    api('POST', '/drafts', { drafts: [draft] }).catch((err) => {
      this.text.value = content;
      this.onError(err);
    });
  }

  // restore puts a draft back in the box.
  restore(d) {
    this.to.value = d.type === 'stream' ? `c:${d.to[0]}` : `d:${dmKey(d.to.length ? d.to : [state.me.user_id])}`;
    this.topic.value = d.topic || '';
    this.text.value = d.content;
    this.showTopic();
    this.text.focus();
  }

  // follow points the box at the narrow on screen.
  follow(n) {
    const to = { channel: `c:${n.channel}`, topic: `c:${n.channel}`, dm: `d:${n.key}` }[n.kind];
    if (to) {
      if (![...this.to.options].some((o) => o.value === to)) this.to.append(el('option', { value: to, text: dmTitle(n.key) }));
      this.to.value = to;
    }
    if (n.kind === 'topic') this.topic.value = n.topic;
    this.showTopic();
  }

  open(kind) {
    if (kind === 'dm' && !this.to.value.startsWith('d:')) {
      const other = [...state.users.values()].find((u) => u.user_id !== state.me.user_id && !u.is_bot);
      if (other) this.to.value = `d:${other.user_id}`;
      this.showTopic();
      this.to.focus();
      return;
    }
    (this.topic.hidden || this.topic.value ? this.text : this.topic).focus();
  }

  // edit puts a message's source in the box, keeping what was there to
  // put back when the edit is saved or abandoned.
  edit(m) {
    if (!this.editing) this.draft = { to: this.to.value, topic: this.topic.value, text: this.text.value };
    this.editing = m;
    const raw = m.raw_content;
    this.text.value = raw ?? '';
    this.form.classList.add('editing');
    if (raw === undefined) {
      api('GET', `/messages/${m.id}`, { apply_markdown: 'false' })
        .then((r) => { if (this.editing === m) this.text.value = r.raw_content ?? r.message?.content ?? ''; })
        .catch((err) => this.onError(err));
    }
    this.text.focus();
  }

  cancel() {
    if (this.editing) this.endEdit();
    this.closeAutocomplete();
    this.text.blur();
  }

  endEdit() {
    this.editing = null;
    this.form.classList.remove('editing');
    const d = this.draft || { to: this.to.value, topic: this.topic.value, text: '' };
    this.draft = null;
    this.to.value = d.to;
    this.topic.value = d.topic;
    this.text.value = d.text;
    this.showTopic();
  }

  // recipients are the user ids a direct message goes to: the one
  // chosen, or the names typed for a new group.
  recipients() {
    const [kind, ids] = this.to.value.split(':');
    if (kind === 'd') return ids.split(',').map(Number);
    const names = this.people.value.split(',').map((s) => s.trim().toLowerCase()).filter(Boolean);
    if (!names.length) throw new Error('Name the people to write to, separated by commas.');
    return names.map((name) => {
      const u = [...state.users.values()].find((p) => p.full_name.toLowerCase() === name || p.email.toLowerCase() === name);
      if (!u) throw new Error(`No one here is called ${name}.`);
      return u.user_id;
    });
  }

  async send() {
    const content = this.text.value.trim();
    if (!content) return;
    this.errorLine.textContent = '';
    try {
      if (this.editing) {
        await api('PATCH', `/messages/${this.editing.id}`, { content });
        this.endEdit();
        return;
      }
      const [kind, id] = this.to.value.split(':');
      if (!kind) throw new Error('Choose a channel or people to write to.');
      if (kind === 'c') await api('POST', '/messages', { type: 'stream', to: id, topic: this.topic.value.trim(), content });
      else await api('POST', '/messages', { type: 'direct', to: this.recipients(), content });
      this.stopTyping();
      this.text.value = '';
    } catch (err) {
      this.errorLine.textContent = err.message;
    }
  }

  keydown(e) {
    if (!this.box.hidden) {
      if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
        e.preventDefault();
        this.choice = (this.choice + (e.key === 'ArrowDown' ? 1 : this.choices.length - 1)) % this.choices.length;
        this.showChoices();
        return;
      }
      if (e.key === 'Enter' || e.key === 'Tab') {
        e.preventDefault();
        this.pick(this.choices[this.choice]);
        return;
      }
      if (e.key === 'Escape') {
        e.preventDefault();
        e.stopPropagation();
        this.closeAutocomplete();
        return;
      }
    }
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      this.send();
    }
  }

  // autocomplete offers people after @ and channels after #.
  autocomplete() {
    const before = this.text.value.slice(0, this.text.selectionStart);
    const match = /(^|\s)([@#])(\*\*)?([^\s*#@]*)$/.exec(before);
    if (!match) return this.closeAutocomplete();
    const [, , sigil, , query] = match;
    const q = query.toLowerCase();
    const pool = sigil === '@'
      ? [...state.users.values()].filter((u) => u.is_active !== false).map((u) => ({ label: u.full_name, detail: u.email, insert: `@**${u.full_name}** ` }))
      : [...state.channels.values()].map((c) => ({ label: `#${c.name}`, detail: '', insert: `#**${c.name}** ` }));
    // A word of the name or the e-mail starts with what was typed.
    const fits = (c) => c.label.toLowerCase().replace('#', '').split(/\s+/).some((w) => w.startsWith(q)) || c.detail.toLowerCase().startsWith(q);
    this.choices = pool.filter(fits).slice(0, 8);
    this.replaceFrom = before.length - sigil.length - query.length - (match[3] ? 2 : 0);
    if (!this.choices.length) return this.closeAutocomplete();
    this.choice = 0;
    this.showChoices();
  }

  showChoices() {
    this.box.hidden = false;
    this.box.replaceChildren(...this.choices.map((c, i) => el('li', { role: 'option', id: `ac-${i}`, 'aria-selected': String(i === this.choice),
      onmousedown: (e) => { e.preventDefault(); this.pick(c); } }, c.label, c.detail && el('small', { text: ' ' + c.detail }))));
    this.text.setAttribute('aria-activedescendant', `ac-${this.choice}`);
  }

  pick(c) {
    const v = this.text.value;
    const end = this.text.selectionStart;
    this.text.value = v.slice(0, this.replaceFrom) + c.insert + v.slice(end);
    const caret = this.replaceFrom + c.insert.length;
    this.text.setSelectionRange(caret, caret);
    this.closeAutocomplete();
    this.text.focus();
  }

  closeAutocomplete() {
    this.box.hidden = true;
    this.text.removeAttribute('aria-activedescendant');
  }

  async attach(file) {
    const placeholder = `[Uploading ${file.name || 'file'}…]`;
    this.insert(placeholder);
    try {
      const r = await upload(file);
      const link = `[${(file.name || 'file').replace(/[[\]]/g, '')}](${r.url || r.uri})`;
      this.text.value = this.text.value.replace(placeholder, link);
    } catch (err) {
      this.text.value = this.text.value.replace(placeholder, '');
      this.errorLine.textContent = `Upload failed: ${err.message}`;
    }
  }

  insert(s) {
    const v = this.text.value;
    this.text.value = v + (v && !v.endsWith('\n') ? '\n' : '') + s;
  }

  typingTarget() {
    const [kind, id] = this.to.value.split(':');
    if (kind === 'c') return { type: 'stream', stream_id: id, topic: this.topic.value.trim() };
    return kind === 'd' ? { type: 'direct', to: id.split(',').map(Number) } : null;
  }

  // typing tells the others, at most every 10 s, and says "stop" to
  // where it said "start" when the target changes or the typing ends.
  typing() {
    const target = this.editing ? null : this.typingTarget();
    if (!target) return;
    if (this.typingTo && JSON.stringify(this.typingTo) !== JSON.stringify(target)) this.stopTyping();
    clearTimeout(this.typingTimer);
    this.typingTimer = setTimeout(() => this.stopTyping(), 5000);
    if (Date.now() - this.typingSent < 10_000) return;
    this.typingSent = Date.now();
    this.typingTo = target;
    api('POST', '/typing', { op: 'start', ...target }).catch(() => {});
  }

  stopTyping() {
    clearTimeout(this.typingTimer);
    const target = this.typingTo;
    this.typingSent = 0;
    this.typingTo = null;
    if (target) api('POST', '/typing', { op: 'stop', ...target }).catch(() => {});
  }
}

export function typingText(senders) {
  const names = senders.map(userName);
  if (!names.length) return '';
  return names.length === 1 ? `${names[0]} is typing…` : `${names.join(', ')} are typing…`;
}
