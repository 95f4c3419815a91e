// compose.js: the compose box. Enter sends, Shift+Enter breaks the line;
// @ and # open an autocomplete of people and channels; a pasted or
// dropped file is uploaded and linked; typing is told to the others.

import { api, upload } from './api.js';
import { el, $ } from './dom.js';
import { state, userName } from './state.js';

export class Compose {
  constructor({ onError }) {
    this.onError = onError;
    this.form = $('compose');
    this.to = $('compose-to');
    this.topic = $('compose-topic');
    this.text = $('compose-text');
    this.box = $('autocomplete');
    this.errorLine = $('compose-error');
    this.editing = null; // the message being edited
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

  // fill lists the places a message can go: channels, then people.
  fill() {
    const current = this.to.value;
    const channels = [...state.channels.values()].sort((a, b) => a.name.localeCompare(b.name));
    const people = [...state.users.values()].filter((u) => u.is_active !== false && !u.is_bot).sort((a, b) => a.full_name.localeCompare(b.full_name));
    this.to.replaceChildren(
      el('optgroup', { label: 'Channels' }, channels.map((c) => el('option', { value: `c:${c.stream_id}`, text: `#${c.name}` }))),
      el('optgroup', { label: 'Direct message' }, people.map((u) => el('option', { value: `d:${u.user_id}`, text: u.full_name }))));
    if (current) this.to.value = current;
    if (!this.to.value && channels.length) this.to.value = `c:${channels[0].stream_id}`;
    this.showTopic();
  }

  showTopic() {
    this.topic.hidden = !this.to.value.startsWith('c:');
  }

  // follow points the box at the narrow on screen.
  follow(n) {
    if (n.kind === 'channel' || n.kind === 'topic') this.to.value = `c:${n.channel}`;
    if (n.kind === 'topic') this.topic.value = n.topic;
    if (n.kind === 'dm' && !n.key.includes(',')) this.to.value = `d:${n.key}`;
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

  edit(m) {
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
    this.editing = null;
    this.form.classList.remove('editing');
    this.closeAutocomplete();
    this.text.blur();
  }

  async send() {
    const content = this.text.value.trim();
    if (!content) return;
    this.errorLine.textContent = '';
    try {
      if (this.editing) {
        await api('PATCH', `/messages/${this.editing.id}`, { content });
        this.editing = null;
        this.form.classList.remove('editing');
      } else {
        const [kind, id] = this.to.value.split(':');
        if (kind === 'c') await api('POST', '/messages', { type: 'stream', to: id, topic: this.topic.value.trim(), content });
        else await api('POST', '/messages', { type: 'direct', to: [Number(id)], content });
        this.stopTyping();
      }
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
    return kind === 'c' ? { type: 'stream', stream_id: id, topic: this.topic.value.trim() } : { type: 'direct', to: [Number(id)] };
  }

  typing() {
    if (this.editing || !this.to.value) return;
    clearTimeout(this.typingTimer);
    this.typingTimer = setTimeout(() => this.stopTyping(), 5000);
    if (Date.now() - this.typingSent < 10_000) return;
    this.typingSent = Date.now();
    api('POST', '/typing', { op: 'start', ...this.typingTarget() }).catch(() => {});
  }

  stopTyping() {
    clearTimeout(this.typingTimer);
    if (!this.typingSent) return;
    this.typingSent = 0;
    api('POST', '/typing', { op: 'stop', ...this.typingTarget() }).catch(() => {});
  }
}

export function typingText(senders) {
  const names = senders.map(userName);
  if (!names.length) return '';
  return names.length === 1 ? `${names[0]} is typing…` : `${names.join(', ')} are typing…`;
}
