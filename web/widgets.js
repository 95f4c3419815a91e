// widgets.js: polls and to-do lists, Zulip's widgets. A message's
// submessages are a log: the first, of type widget and from the
// message's sender, says what the message is; each later one is what a
// reader did. The log is replayed as Zulip's web app replays it
// (web/shared/src/poll_data.ts, web/src/todo_widget.ts) and drawn in
// the message's place: a poll's options with their votes, a to-do
// list's tasks. A vote or a tick posts a submessage; its event brings
// it back to every reader, this page included.

import { api } from './api.js';
import { el } from './dom.js';
import { state, userName } from './state.js';

const maxIdx = 1000; // Zulip's MAX_IDX: a reader's options or tasks

function parse(text) {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

const isIdx = (n) => Number.isInteger(n) && n >= 0 && n <= maxIdx;

// widgetOf replays a message's submessages: a poll or a to-do list, or
// null for a message that is neither (or another widget).
export function widgetOf(m) {
  const [first, ...rest] = [...(m.submessages || [])].sort((x, y) => x.id - y.id);
  if (!first || first.msg_type !== 'widget' || first.sender_id !== m.sender_id) return null;
  const def = parse(first.content);
  const extra = (def && typeof def.extra_data === 'object' && def.extra_data) || {};
  const events = rest.map((s) => ({ sender: s.sender_id, data: parse(s.content) })).filter((e) => e.data && typeof e.data === 'object');
  if (def?.widget_type === 'poll') return poll(m, extra, events);
  if (def?.widget_type === 'todo') return todo(m, extra, events);
  return null;
}

function poll(m, extra, events) {
  const p = { type: 'poll', question: typeof extra.question === 'string' ? extra.question : '', options: new Map() };
  const add = (sender, idx, text) => {
    // /poll may repeat an option; the web app shows it once.
    if (typeof text !== 'string' || !isIdx(idx) || [...p.options.values()].some((o) => o.text === text)) return;
    p.options.set(`${sender},${idx}`, { text, voters: new Set() });
  };
  (Array.isArray(extra.options) ? extra.options : []).forEach((text, i) => add('canned', i, text));
  for (const { sender, data } of events) {
    if (data.type === 'new_option') add(sender, data.idx, data.option);
    else if (data.type === 'question' && sender === m.sender_id && typeof data.question === 'string') p.question = data.question;
    else if (data.type === 'vote') {
      const option = p.options.get(data.key);
      if (option && data.vote === 1) option.voters.add(sender);
      else if (option && data.vote === -1) option.voters.delete(sender);
    }
  }
  return p;
}

function todo(m, extra, events) {
  const title = typeof extra.task_list_title === 'string' && extra.task_list_title ? extra.task_list_title : 'Task list';
  const t = { type: 'todo', title, tasks: new Map() };
  const add = (sender, idx, task, desc, completed) => {
    if (!isIdx(idx) || typeof task !== 'string' || typeof desc !== 'string' || typeof completed !== 'boolean') return;
    if ([...t.tasks.values()].some((x) => x.task === task)) return;
    t.tasks.set(`${idx},${sender}`, { task, desc, completed });
  };
  (Array.isArray(extra.tasks) ? extra.tasks : []).forEach((x, i) => add('canned', i, x?.task, x?.desc, false));
  for (const { sender, data } of events) {
    if (data.type === 'new_task') add(sender, data.key, data.task, data.desc, data.completed);
    else if (data.type === 'new_task_list_title' && sender === m.sender_id && typeof data.title === 'string') t.title = data.title;
    else if (data.type === 'strike') {
      const task = t.tasks.get(data.key);
      if (task) task.completed = !task.completed;
    }
  }
  return t;
}

// renderWidget draws a widget of message m; acting on it posts a
// submessage (onError hears a refusal).
export function renderWidget(m, w, onError) {
  const act = (data) => api('POST', '/submessage', { message_id: String(m.id), msg_type: 'widget', content: JSON.stringify(data) }).catch(onError);
  if (w.type === 'poll') {
    return el('div', { class: 'widget poll', role: 'group', 'aria-label': `Poll: ${w.question}` },
      el('strong', { class: 'question', text: w.question || 'Poll' }),
      el('ul', {}, [...w.options].map(([key, o]) => {
        const mine = o.voters.has(state.me.user_id);
        const names = [...o.voters].map(userName).join(', ');
        return el('li', {}, el('button', { type: 'button', class: 'vote' + (mine ? ' mine' : ''), 'aria-pressed': String(mine), title: names,
          onclick: () => act({ type: 'vote', key, vote: mine ? -1 : 1 }) },
        el('span', { class: 'count', text: String(o.voters.size) }), ' ', o.text));
      })));
  }
  return el('div', { class: 'widget todo', role: 'group', 'aria-label': `To-do list: ${w.title}` },
    el('strong', { class: 'question', text: w.title }),
    el('ul', {}, [...w.tasks].map(([key, x]) => el('li', {}, el('label', {},
      el('input', { type: 'checkbox', checked: x.completed, onchange: () => act({ type: 'strike', key }) }), ' ',
      el('span', { class: 'task', text: x.task }), x.desc ? `: ${x.desc}` : '')))));
}
