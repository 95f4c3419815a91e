// emoji_picker.js: the whole emoji table with a search, loaded the first
// time a reaction is picked (not with the page): the names come from
// the server's emoji_api.json, as Zulip's web app reads them.

import { el, emojiChar } from './dom.js';

const popular = ['1f44d', '2764', '1f642', '1f389', '1f440', '1f602', '1f64f', '1f680'];
let table = null; // [{code, name, names}] in code order

async function loadTable() {
  if (!table) {
    table = (async () => {
      const r = await fetch('/static/generated/emoji/emoji_api.json', { credentials: 'same-origin' });
      const body = await r.json();
      return Object.entries(body.code_to_names).map(([code, names]) => ({ code, name: names[0], names }))
        .sort((a, b) => a.code.localeCompare(b.code));
    })();
    table.catch(() => { table = null; });
  }
  return table;
}

// openPicker shows the picker after a button; pick(name, code) is told
// the choice. Esc or a second press closes it.
export async function openPicker(button, pick) {
  const existing = button.parentNode.querySelector('.picker');
  if (existing) return existing.remove();
  const emoji = await loadTable();
  const byCode = new Map(emoji.map((e) => [e.code, e]));
  const choose = (e) => {
    picker.remove();
    button.focus();
    pick(e.name, e.code);
  };
  const buttonOf = (e) => el('button', { type: 'button', 'aria-label': e.name, title: `:${e.name}:`, text: emojiChar(e.code), onclick: () => choose(e) });
  const grid = el('div', { class: 'emoji-grid', role: 'group', 'aria-label': 'All emoji' });
  const search = el('input', { type: 'search', placeholder: 'Search emoji', 'aria-label': 'Search emoji' });
  const fill = () => {
    const q = search.value.trim().toLowerCase().replace(/^:|:$/g, '');
    const found = q ? emoji.filter((e) => e.names.some((n) => n.includes(q))) : emoji;
    grid.replaceChildren(...found.map(buttonOf));
    if (!found.length) grid.append(el('p', { class: 'empty', text: 'No emoji match.' }));
  };
  search.addEventListener('input', fill);
  search.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') {
      e.preventDefault();
      grid.querySelector('button')?.click();
    }
  });
  const picker = el('div', { class: 'picker', role: 'dialog', 'aria-label': 'Pick a reaction' },
    el('div', { class: 'popular', role: 'group', 'aria-label': 'Popular' }, popular.map((c) => byCode.get(c)).filter(Boolean).map(buttonOf)),
    search, grid);
  picker.addEventListener('keydown', (e) => {
    if (e.key === 'Escape') {
      e.stopPropagation();
      picker.remove();
      button.focus();
    }
  });
  fill();
  button.after(picker);
  search.focus();
}
