// settings.js: the personal and organization settings pages, Zulip's
// #settings/... and #organization/... overlays, loaded the first time
// one is opened. Every form calls the /json/ twin of Zulip's route and
// shows Zulip's own error text when the server refuses.

import { api, csrf } from './api.js';
import { el } from './dom.js';
import { state, topicName, userName } from './state.js';

// The system groups, as Zulip's settings name them.
const groupLabels = {
  'role:owners': 'Owners', 'role:administrators': 'Administrators', 'role:moderators': 'Moderators',
  'role:fullmembers': 'Full members', 'role:members': 'Members', 'role:everyone': 'Everyone including guests',
  'role:internet': 'Everyone on the internet', 'role:nobody': 'Nobody',
};

// The organization permissions PATCH /realm changes, with Zulip's labels.
const permissions = [
  ['can_create_public_channel_group', 'Who can create public channels'],
  ['can_create_private_channel_group', 'Who can create private channels'],
  ['can_mention_many_users_group', 'Who can notify a large number of users with a wildcard mention'],
  ['can_delete_any_message_group', 'Who can delete any message'],
  ['can_delete_own_message_group', 'Who can delete their own messages everywhere'],
  ['can_move_messages_between_channels_group', 'Who can move messages to another channel'],
  ['can_move_messages_between_topics_group', 'Who can move messages to another topic'],
  ['can_resolve_topics_group', 'Who can resolve topics'],
  ['direct_message_permission_group', 'Who can authorize a direct message conversation'],
  ['direct_message_initiator_group', 'Who can start a direct message conversation'],
];

const personalTabs = [
  ['settings/profile', 'Profile'],
  ['settings/channels', 'Subscribed channels'],
  ['settings/topics', 'Topics'],
  ['settings/muted-users', 'Muted users'],
  ['settings/alert-words', 'Alert words'],
  ['settings/drafts', 'Drafts'],
  ['settings/scheduled', 'Scheduled messages'],
];
const adminTabs = [
  ['organization/permissions', 'Permissions'],
  ['organization/users', 'Users'],
  ['organization/channels', 'Channels'],
  ['organization/invites', 'Invitations'],
  ['organization/emoji-settings', 'Custom emoji'],
  ['organization/linkifier-settings', 'Linkifiers'],
  ['organization/user-groups-admin', 'User groups'],
];

const pages = {
  'settings/profile': profile,
  'settings/channels': channels,
  'settings/topics': topics,
  'settings/muted-users': mutedUsers,
  'settings/alert-words': alertWords,
  'settings/drafts': drafts,
  'settings/scheduled': scheduled,
  'organization/permissions': realmPermissions,
  'organization/users': users,
  'organization/channels': adminChannels,
  'organization/invites': invites,
  'organization/emoji-settings': customEmoji,
  'organization/linkifier-settings': linkifiers,
  'organization/user-groups-admin': userGroups,
};

// renderSettings draws a tab into root: the tab list, then the page.
// The page is drawn aside and put in place whole, keeping what the
// person was typing there (an event draws the tab anew while they type).
let actions = {}; // what the page does for a settings page: restore a draft
let drawing = 0; // the latest drawing: an older one still loading is dropped

export async function renderSettings(root, tab, pageActions = {}) {
  actions = pageActions;
  const n = ++drawing;
  const isAdmin = state.isAdmin;
  const tabs = [...personalTabs, ...(isAdmin ? adminTabs : [])];
  const link = ([t, label]) => el('li', {}, el('a', { href: `#${t}`, class: 'nav' + (t === tab ? ' current' : ''), 'aria-current': t === tab ? 'page' : null, text: label }));
  const nav = el('nav', { class: 'settings-tabs', 'aria-label': 'Settings pages' },
    el('h2', { text: 'Personal settings' }), el('ul', { class: 'list' }, personalTabs.map(link)),
    isAdmin && el('h2', { text: 'Organization settings' }), isAdmin && el('ul', { class: 'list' }, adminTabs.map(link)));
  const body = el('div', { class: 'settings-page' });
  const draw = pages[tab] && (tab.startsWith('organization/') ? isAdmin : true) ? pages[tab] : profile;
  const label = tabs.find(([t]) => t === tab)?.[1] ?? 'Profile';
  body.append(el('h2', { class: 'page-title', text: label }));
  try {
    await draw(body);
  } catch (err) {
    body.append(el('p', { class: 'error', role: 'alert', text: err.message }));
  }
  if (n !== drawing) return;
  const kept = typed(root);
  root.replaceChildren(nav, body);
  keep(root, kept);
}

// typed is what the person has typed or chosen on the page and not yet
// saved, and where the focus is: the fields of a form not sent (what a
// form sent is the server's now, and the page draws it anew), and a
// focused text box outside forms (saved when it changes).
function typed(root) {
  const fields = new Map();
  for (const n of root.querySelectorAll('input, select, textarea')) {
    const unsaved = n.form ? !n.form.sent : n === document.activeElement && ['text', 'search', 'textarea'].includes(n.type);
    if (unsaved && n.type !== 'file' && changed(n)) fields.set(controlKey(n), n.type === 'checkbox' ? n.checked : n.value);
  }
  const f = document.activeElement;
  return { fields, focus: f !== root && root.contains(f) ? { key: controlKey(f), start: f.selectionStart, end: f.selectionEnd } : null };
}

function keep(root, { fields, focus }) {
  for (const n of root.querySelectorAll('input, select, textarea')) {
    const v = fields.get(controlKey(n));
    if (v === undefined) continue;
    if (n.type === 'checkbox') n.checked = v;
    else if (n.tagName !== 'SELECT' || [...n.options].some((o) => o.value === v)) n.value = v;
  }
  const f = focus && [...root.querySelectorAll('a, button, input, select, textarea')].find((n) => controlKey(n) === focus.key);
  if (!f) return;
  f.focus();
  if (typeof focus.start === 'number') f.setSelectionRange(focus.start, focus.end);
}

const changed = (n) => (n.type === 'checkbox' ? n.checked !== n.defaultChecked
  : n.tagName === 'SELECT' ? n.value !== (n.querySelector('option[selected]') || n.options[0])?.value : n.value !== n.defaultValue);

// controlKey names a control as a person finds it: the form or row it
// stands in, its label, and a checkbox's value.
const controlKey = (n) => [n.parentElement.closest('[aria-label]')?.getAttribute('aria-label'),
  n.name || n.getAttribute('aria-label') || n.labels?.[0]?.textContent || n.textContent, n.type === 'checkbox' ? n.value : ''].join('\n');

// form builds a form whose submit runs act; a refusal shows Zulip's msg
// in the form's alert, a success says done.
let flash = null; // {label, text, until}: a success outlives the redraw its event brings

function form(label, fields, submit, act, done) {
  const result = el('p', { class: 'result', role: 'status' });
  if (flash && flash.label === label && flash.until > Date.now()) result.textContent = flash.text;
  const f = el('form', { class: 'setting-form', 'aria-label': label }, fields, el('button', { type: 'submit', text: submit }), result);
  f.addEventListener('input', () => { f.sent = false; });
  f.addEventListener('submit', async (e) => {
    e.preventDefault();
    result.textContent = '';
    result.classList.remove('error');
    f.sent = true; // a redraw meanwhile draws what the server has
    try {
      await act(f);
      flash = { label, text: done || 'Saved.', until: Date.now() + 5000 };
      // An event may have drawn the page again meanwhile: say it there.
      const live = f.isConnected ? result : document.querySelector(`form[aria-label="${CSS.escape(label)}"] .result`);
      if (live) live.textContent = flash.text;
    } catch (err) {
      f.sent = false;
      result.classList.add('error');
      result.setAttribute('role', 'alert');
      result.textContent = err.message;
    }
  });
  return f;
}

const field = (label, attrs) => el('label', {}, label, ' ', el('input', attrs));
// action is a button whose press runs act; a refusal shows beside it.
function action(text, act, attrs = {}) {
  const b = el('button', { type: 'button', text, ...attrs });
  b.addEventListener('click', async () => {
    b.nextElementSibling?.classList.contains('error') && b.nextElementSibling.remove();
    try {
      await act();
    } catch (err) {
      b.after(el('span', { class: 'error', role: 'alert', text: ` ${err.message}` }));
    }
  });
  return b;
}

function profile(body) {
  const me = state.users.get(state.me.user_id) || {};
  const avatar = el('img', { class: 'avatar big', src: me.avatar_url || undefined, alt: 'Your avatar', width: 80, height: 80 });
  const file = el('input', { type: 'file', accept: 'image/png,image/jpeg,image/gif', name: 'file' });
  const status = state.registered?.user_status?.[state.me.user_id] || {};
  body.append(
    el('p', {}, el('strong', { text: me.full_name || state.me.full_name }), ` (${state.me.email})`),
    el('section', { 'aria-label': 'Name' }, el('h3', { text: 'Name' }),
      form('Change your name', [field('Full name', { name: 'full_name', required: true, maxlength: 100, value: me.full_name || state.me.full_name, autocomplete: 'name' })],
        'Save name', (f) => api('PATCH', '/settings', { full_name: f.elements.full_name.value }), 'Name saved.')),
    el('section', { 'aria-label': 'Password' }, el('h3', { text: 'Password' }),
      form('Change your password', [
        field('Old password', { name: 'old_password', type: 'password', required: true, autocomplete: 'current-password' }),
        field('New password', { name: 'new_password', type: 'password', required: true, autocomplete: 'new-password' }),
      ], 'Change password', async (f) => {
        // A new password ends every session of the account, this one
        // too: the page comes back at the login form, which says why.
        sessionStorage.setItem('zulite-relogin', state.me.email);
        try {
          await api('PATCH', '/settings', { old_password: f.elements.old_password.value, new_password: f.elements.new_password.value });
        } catch (err) {
          sessionStorage.removeItem('zulite-relogin');
          throw err;
        }
        location.reload();
      }, 'Password changed.')),
    el('section', { 'aria-label': 'Avatar' }, el('h3', { text: 'Avatar' }), avatar,
      form('Upload an avatar', [el('label', {}, 'Image ', file)], 'Upload avatar', async () => {
        if (!file.files[0]) throw new Error('Choose an image first.');
        const data = new FormData();
        data.append('file', file.files[0]);
        const r = await fetch('/json/users/me/avatar', { method: 'POST', body: data, headers: { 'X-CSRFToken': csrf() }, credentials: 'same-origin' });
        const answer = await r.json().catch(() => ({}));
        if (!r.ok || answer.result !== 'success') throw new Error(answer.msg || `HTTP ${r.status}`);
        avatar.src = answer.avatar_url;
      }, 'Avatar uploaded.'),
      action('Delete avatar', async () => {
        await api('DELETE', '/users/me/avatar');
        avatar.removeAttribute('src');
      })),
    el('section', { 'aria-label': 'Status' }, el('h3', { text: 'Status' }),
      form('Set your status', [
        field('Status text', { name: 'status_text', maxlength: 60, value: status.status_text || '' }),
        field('Status emoji', { name: 'emoji_name', value: status.emoji_name || '', placeholder: 'e.g. palm_tree' }),
        el('label', {}, el('input', { type: 'checkbox', name: 'away', checked: !!status.away }), ' Away'),
      ], 'Save status', (f) => api('POST', '/users/me/status', {
        status_text: f.elements.status_text.value.trim(), emoji_name: f.elements.emoji_name.value.trim().replace(/^:|:$/g, ''),
        away: f.elements.away.checked,
      }), 'Status saved.'),
      action('Clear status', () => api('POST', '/users/me/status', { status_text: '', emoji_name: '', away: false }))));
}

// A channel's notifications, each with the personal setting it follows
// while unset (null), as Zulip's stream_data.receives_notifications.
const notificationNames = [['desktop_notifications', 'Desktop notifications', 'enable_stream_desktop_notifications'],
  ['audible_notifications', 'Audible notifications', 'enable_stream_audible_notifications'],
  ['push_notifications', 'Mobile notifications', 'enable_stream_push_notifications'],
  ['email_notifications', 'Email notifications', 'enable_stream_email_notifications'],
  ['wildcard_mentions_notify', 'Notifications for @all/@everyone mentions', 'wildcard_mentions_notify']];

// setProperty changes one property of a subscription.
const setProperty = (sub, property, value) => api('POST', '/users/me/subscriptions/properties', { subscription_data: [{ stream_id: sub.stream_id, property, value }] });

function channels(body) {
  const subs = [...state.channels.values()].sort((a, b) => a.name.localeCompare(b.name));
  if (!subs.length) body.append(el('p', { class: 'empty', text: 'You are not subscribed to any channels.' }));
  body.append(el('ul', { class: 'rows' }, subs.map((sub) => {
    const check = (property, label, value) => el('label', {}, el('input', { type: 'checkbox', checked: !!value,
      onchange: (e) => setProperty(sub, property, e.target.checked).catch((err) => { e.target.checked = !e.target.checked; alertAfter(e.target, err); }) }), ` ${label}`);
    // The swatch, and the hex code typed as Zulip's color picker takes it.
    const color = el('input', { type: 'color', value: sub.color || '#c2c2c2', 'aria-label': `Color of #${sub.name}` });
    const code = el('input', { value: sub.color || '', size: 7, autocomplete: 'off', 'aria-label': `Color code of #${sub.name}` });
    for (const n of [color, code]) n.addEventListener('change', () => setProperty(sub, 'color', n.value.trim()).catch((err) => alertAfter(n, err)));
    return el('li', { class: 'channel-row', 'aria-label': `#${sub.name}` },
      el('h3', { text: `#${sub.name}` }), sub.description ? el('p', { class: 'muted', text: sub.description }) : null,
      el('div', { class: 'options' }, el('label', {}, 'Color ', color, ' ', code),
        check('is_muted', 'Mute channel', sub.is_muted), check('pin_to_top', 'Pin to top', sub.pin_to_top),
        ...notificationNames.map(([p, label, global]) => check(p, label, sub[p] ?? state.registered?.user_settings?.[global]))),
      action(`Leave #${sub.name}`, () => api('DELETE', '/users/me/subscriptions', { subscriptions: [sub.name] }), { class: 'danger' }));
  })));
}

function alertAfter(node, err) {
  node.closest('label, li')?.append(el('span', { class: 'error', role: 'alert', text: ` ${err.message}` }));
}

const visibilityNames = { 1: 'Muted', 2: 'Unmuted', 3: 'Followed' };

function topics(body) {
  const list = (state.registered?.user_topics || []).filter((t) => t.visibility_policy);
  const channelSelect = el('select', { name: 'channel', 'aria-label': 'Channel' },
    [...state.channels.values()].sort((a, b) => a.name.localeCompare(b.name)).map((c) => el('option', { value: c.stream_id, text: `#${c.name}` })));
  const policy = el('select', { name: 'visibility', 'aria-label': 'Visibility' },
    el('option', { value: '1', text: 'Mute' }), el('option', { value: '3', text: 'Follow' }), el('option', { value: '2', text: 'Unmute' }));
  body.append(
    form('Mute or follow a topic', [el('label', {}, 'Channel ', channelSelect), field('Topic', { name: 'topic', maxlength: 60 }), el('label', {}, 'Set to ', policy)],
      'Save topic', (f) => api('POST', '/user_topics', { stream_id: channelSelect.value, topic: f.elements.topic.value.trim(), visibility_policy: policy.value })),
    list.length ? el('table', { class: 'grid' }, el('thead', {}, el('tr', {}, el('th', { text: 'Channel' }), el('th', { text: 'Topic' }), el('th', { text: 'Status' }), el('th', { text: 'Actions' }))),
      el('tbody', {}, list.map((t) => el('tr', {},
        el('td', { text: `#${state.channels.get(t.stream_id)?.name ?? t.stream_id}` }), el('td', { text: topicName(t.topic_name) }),
        el('td', { text: visibilityNames[t.visibility_policy] }),
        el('td', {}, action(`Reset ${topicName(t.topic_name)}`, () => api('POST', '/user_topics', { stream_id: String(t.stream_id), topic: t.topic_name, visibility_policy: '0' })))))))
      : el('p', { class: 'empty', text: 'You have not muted or followed any topics.' }));
}

function mutedUsers(body) {
  const muted = state.registered?.muted_users || [];
  const people = [...state.users.values()].filter((u) => u.user_id !== state.me.user_id && u.is_active !== false && !muted.some((m) => m.id === u.user_id))
    .sort((a, b) => a.full_name.localeCompare(b.full_name));
  const who = el('select', { name: 'user', 'aria-label': 'Person to mute' }, people.map((u) => el('option', { value: u.user_id, text: u.full_name })));
  body.append(
    form('Mute a person', [el('label', {}, 'Person ', who)], 'Mute', () => api('POST', `/users/me/muted_users/${who.value}`)),
    muted.length ? el('ul', { class: 'rows' }, muted.map((m) => el('li', {}, el('span', { text: userName(m.id) }), ' ',
      action(`Unmute ${userName(m.id)}`, () => api('DELETE', `/users/me/muted_users/${m.id}`)))))
      : el('p', { class: 'empty', text: 'You have not muted anyone.' }));
}

async function alertWords(body) {
  const { alert_words: words } = await api('GET', '/users/me/alert_words');
  body.append(
    el('p', { class: 'muted', text: 'Messages that contain an alert word notify you as a mention does.' }),
    form('Add an alert word', [field('Alert word', { name: 'word', required: true })], 'Add alert word',
      (f) => api('POST', '/users/me/alert_words', { alert_words: [f.elements.word.value.trim()] }), 'Alert word added.'),
    words.length ? el('ul', { class: 'rows' }, words.map((w) => el('li', {}, el('span', { text: w }), ' ',
      action(`Delete ${w}`, () => api('DELETE', '/users/me/alert_words', { alert_words: [w] }).then(() => redraw())))))
      : el('p', { class: 'empty', text: 'You have no alert words.' }));
}

// redraw draws the tab on screen again (after a change no event tells).
function redraw() {
  window.dispatchEvent(new HashChangeEvent('hashchange'));
}

function whereText(d) {
  if (d.type === 'stream' || d.type === 'channel') return `#${state.channels.get(Number(Array.isArray(d.to) ? d.to[0] : d.to))?.name ?? d.to} › ${topicName(d.topic)}`;
  return (Array.isArray(d.to) ? d.to : [d.to]).map(userName).join(', ');
}

async function drafts(body) {
  const { drafts: list } = await api('GET', '/drafts');
  body.append(list.length ? el('ul', { class: 'rows' }, list.sort((a, b) => b.timestamp - a.timestamp).map((d) => el('li', { class: 'draft' },
    el('div', { class: 'muted', text: `${whereText(d)} · ${new Date(d.timestamp * 1000).toLocaleString()}` }),
    el('p', { class: 'draft-text', text: d.content }),
    el('div', { class: 'buttons' },
      action('Restore draft', async () => {
        await api('DELETE', `/drafts/${d.id}`);
        actions.restore?.(d);
      }),
      action('Delete draft', () => api('DELETE', `/drafts/${d.id}`).then(redraw))))))
    : el('p', { class: 'empty', text: 'No drafts.' }));
}

async function scheduled(body) {
  const { scheduled_messages: list } = await api('GET', '/scheduled_messages');
  const channelSelect = el('select', { name: 'channel', 'aria-label': 'Channel' },
    [...state.channels.values()].sort((a, b) => a.name.localeCompare(b.name)).map((c) => el('option', { value: c.stream_id, text: `#${c.name}` })));
  const soon = new Date(Date.now() + 3600_000);
  soon.setMinutes(0, 0, 0);
  const local = (d) => new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
  body.append(
    form('Schedule a message', [el('label', {}, 'Channel ', channelSelect), field('Topic', { name: 'topic', maxlength: 60 }),
      el('label', {}, 'Message ', el('textarea', { name: 'content', rows: 2, required: true })),
      field('Send at', { name: 'at', type: 'datetime-local', value: local(soon), required: true })],
    'Schedule message', async (f) => {
      await api('POST', '/scheduled_messages', { type: 'stream', to: channelSelect.value, topic: f.elements.topic.value.trim(), content: f.elements.content.value,
        scheduled_delivery_timestamp: String(Math.floor(new Date(f.elements.at.value).getTime() / 1000)) });
      redraw();
    }, 'Message scheduled.'),
    list.length ? el('ul', { class: 'rows' }, list.sort((a, b) => a.scheduled_delivery_timestamp - b.scheduled_delivery_timestamp).map((m) => el('li', { class: 'draft' },
      el('div', { class: 'muted', text: `${whereText(m)} · ${new Date(m.scheduled_delivery_timestamp * 1000).toLocaleString()}${m.failed ? ' · failed' : ''}` }),
      el('p', { class: 'draft-text', text: m.content }),
      action('Cancel scheduled message', () => api('DELETE', `/scheduled_messages/${m.scheduled_message_id}`).then(redraw)))))
      : el('p', { class: 'empty', text: 'No scheduled messages.' }));
}

function realmPermissions(body) {
  const r = state.registered || {};
  const groups = (r.realm_user_groups || []).filter((g) => g.is_system_group && groupLabels[g.name]);
  body.append(form('Organization permissions', permissions.map(([name, label]) => el('label', { class: 'row' }, label, ' ',
    el('select', { name }, groups.map((g) => el('option', { value: g.id, text: groupLabels[g.name], selected: r[`realm_${name}`] === g.id }))))),
  'Save changes', async (f) => {
    const changed = {};
    for (const [name] of permissions) {
      const value = Number(f.elements[name].value);
      if (value !== r[`realm_${name}`]) changed[name] = JSON.stringify({ new: value, old: r[`realm_${name}`] });
    }
    if (!Object.keys(changed).length) return;
    await api('PATCH', '/realm', changed);
    for (const [name, v] of Object.entries(changed)) r[`realm_${name}`] = JSON.parse(v).new;
  }));
}

// Zulip's role names (settings_config.user_role_values).
const roleNames = [[100, 'Organization owner'], [200, 'Organization administrator'], [300, 'Moderator'], [400, 'Member'], [600, 'Guest']];
const roleName = (role) => roleNames.find(([r]) => r === role)?.[1] ?? 'Member';

async function users(body) {
  const { members } = await api('GET', '/users');
  const people = members.filter((u) => !u.is_bot).sort((a, b) => a.full_name.localeCompare(b.full_name));
  body.append(
    form('Add a person', [field('Name', { name: 'full_name', required: true }), field('E-mail', { name: 'email', type: 'email', required: true }),
      field('Password', { name: 'password', type: 'password', required: true, minlength: 6, autocomplete: 'new-password' })],
    'Add person', async (f) => {
      const name = f.elements.full_name.value.trim();
      await api('POST', '/users', { full_name: name, email: f.elements.email.value.trim(), password: f.elements.password.value });
      f.reset();
      f.dataset.added = name;
    }, 'Added: they can now log in.'),
    el('table', { class: 'grid' }, el('thead', {}, el('tr', {}, el('th', { text: 'Name' }), el('th', { text: 'E-mail' }), el('th', { text: 'Role' }), el('th', { text: 'Actions' }))),
      el('tbody', {}, people.map((u) => {
        const role = el('select', { 'aria-label': `Role of ${u.full_name}`, disabled: !u.is_active || u.user_id === state.me.user_id },
          roleNames.map(([r, label]) => el('option', { value: r, text: label, selected: r === u.role })));
        role.addEventListener('change', () => api('PATCH', `/users/${u.user_id}`, { role: role.value }).then(redraw, (err) => {
          role.value = u.role;
          role.after(el('span', { class: 'error', role: 'alert', text: ` ${err.message}` }));
        }));
        return el('tr', {}, el('td', { text: u.full_name + (u.is_active ? '' : ' (deactivated)') }),
          el('td', { text: u.email }), el('td', {}, role),
          el('td', {}, u.user_id === state.me.user_id ? null : u.is_active
            ? action(`Deactivate ${u.full_name}`, () => api('DELETE', `/users/${u.user_id}`).then(redraw), { class: 'danger' })
            : action(`Reactivate ${u.full_name}`, () => api('POST', `/users/${u.user_id}/reactivate`).then(redraw))));
      }))));
}

// The channel permissions of Zulip's channel settings, with its labels.
const channelPermissions = [
  ['can_send_message_group', 'Who can post to this channel'],
  ['can_administer_channel_group', 'Who can administer this channel'],
  ['can_subscribe_group', 'Who can subscribe to this channel'],
  ['can_add_subscribers_group', 'Who can subscribe anyone to this channel'],
  ['can_remove_subscribers_group', 'Who can unsubscribe anyone from this channel'],
  ['can_move_messages_within_channel_group', 'Who can move messages inside this channel'],
  ['can_move_messages_out_of_channel_group', 'Who can move messages out of this channel'],
  ['can_resolve_topics_group', 'Who can resolve topics in this channel'],
  ['can_delete_any_message_group', 'Who can delete any message in this channel'],
  ['can_delete_own_message_group', 'Who can delete their own messages in this channel'],
];

// groupSelect offers the system groups for a group setting; a value
// that is not one of them (a set of people) shows as Custom.
function groupSelect(name, label, value) {
  const groups = (state.registered?.realm_user_groups || []).filter((g) => g.is_system_group && groupLabels[g.name]);
  const custom = typeof value !== 'number';
  return el('label', { class: 'row' }, label, ' ', el('select', { name },
    custom ? el('option', { value: '', text: 'Custom', selected: true }) : null,
    groups.map((g) => el('option', { value: g.id, text: groupLabels[g.name], selected: g.id === value }))));
}

async function adminChannels(body) {
  const { streams } = await api('GET', '/streams');
  const all = streams.sort((a, b) => a.name.localeCompare(b.name));
  body.append(
    form('Create a channel', [field('New channel', { name: 'name', required: true, maxlength: 60 }), field('Description', { name: 'description', maxlength: 1024 })],
      'Create channel', async (f) => {
        const name = f.elements.name.value.trim();
        await api('POST', '/users/me/subscriptions', { subscriptions: [{ name, description: f.elements.description.value.trim() }] });
        f.reset();
        redraw();
      }, 'Channel created.'),
    el('ul', { class: 'rows' }, all.map((c) => el('li', { class: 'channel-row', 'aria-label': `#${c.name}` },
      el('h3', { text: `#${c.name}` }),
      form(`Settings of #${c.name}`, [
        field('Channel name', { name: 'new_name', required: true, maxlength: 60, value: c.name }),
        field('Channel description', { name: 'description', maxlength: 1024, value: c.description || '' }),
        ...channelPermissions.map(([name, label]) => groupSelect(name, label, c[name])),
      ], 'Save channel', async (f) => {
        const changed = {};
        if (f.elements.new_name.value.trim() !== c.name) changed.new_name = f.elements.new_name.value.trim();
        if (f.elements.description.value.trim() !== (c.description || '')) changed.description = f.elements.description.value.trim();
        for (const [name] of channelPermissions) {
          const v = f.elements[name].value;
          if (v !== '' && Number(v) !== c[name]) changed[name] = JSON.stringify({ new: Number(v) });
        }
        if (!Object.keys(changed).length) return;
        await api('PATCH', `/streams/${c.stream_id}`, changed);
        redraw();
      }, 'Channel saved.'),
      action(`Archive #${c.name}`, () => api('DELETE', `/streams/${c.stream_id}`).then(redraw), { class: 'danger' })))),
    all.length ? null : el('p', { class: 'empty', text: 'No channels.' }));
}

// Zulip's invitation roles, in its invite modal's order (only an owner
// may invite owners), and expiry choices (settings_config).
const inviteRoles = [[600, 'Guests'], [400, 'Members'], [300, 'Moderators'], [200, 'Organization administrators'], [100, 'Organization owners']];
const expiries = [[1440, '1 day'], [2 * 1440, '2 days'], [10 * 1440, '10 days'], [30 * 1440, '30 days'], ['null', 'Never expires']];

async function invites(body) {
  const { invites: list } = await api('GET', '/invites');
  const link = el('input', { readonly: true, 'aria-label': 'Invitation link', class: 'link', hidden: true });
  const copy = el('button', { type: 'button', text: 'Copy link', hidden: true });
  copy.addEventListener('click', () => {
    link.select();
    navigator.clipboard?.writeText(link.value).catch(() => {});
  });
  body.append(
    form('Create an invitation link', [
      el('label', {}, 'Users who join will be ', el('select', { name: 'invite_as' }, inviteRoles.filter(([r]) => r !== 100 || state.registered?.is_owner)
        .map(([r, label]) => el('option', { value: r, text: label, selected: r === 400 })))),
      el('label', {}, 'Link expires after ', el('select', { name: 'expires' }, expiries.map(([m, label]) => el('option', { value: m, text: label, selected: m === 10 * 1440 })))),
    ], 'Create link', async (f) => {
      const r = await api('POST', '/invites/multiuse', { invite_as: f.elements.invite_as.value, invite_expires_in_minutes: f.elements.expires.value });
      sessionStorage.setItem('zulite-new-invite', r.invite_link);
      redraw();
    }, 'Link created.'),
    el('p', {}, link, ' ', copy),
    list.length ? el('table', { class: 'grid' }, el('thead', {}, el('tr', {}, el('th', { text: 'Invitation' }), el('th', { text: 'Role' }), el('th', { text: 'Expires' }), el('th', { text: 'Actions' }))),
      el('tbody', {}, list.sort((a, b) => b.invited - a.invited).map((i) => el('tr', {},
        el('td', { text: i.is_multiuse ? i.link_url : i.email }),
        el('td', { text: inviteRoles.find(([r]) => r === i.invited_as)?.[1] ?? '' }),
        el('td', { text: i.expiry_date ? new Date(i.expiry_date * 1000).toLocaleString() : 'Never' }),
        el('td', {}, action(i.is_multiuse ? 'Revoke link' : `Revoke ${i.email}`,
          () => api('DELETE', i.is_multiuse ? `/invites/multiuse/${i.id}` : `/invites/${i.id}`).then(redraw), { class: 'danger' }))))))
      : el('p', { class: 'empty', text: 'No invitations.' }));
  const fresh = sessionStorage.getItem('zulite-new-invite');
  sessionStorage.removeItem('zulite-new-invite');
  if (fresh) {
    link.value = fresh;
    link.hidden = copy.hidden = false;
  }
}

// postFile sends a form with a file, as api cannot.
async function postFile(path, data) {
  const r = await fetch('/json' + path, { method: 'POST', body: data, headers: { 'X-CSRFToken': csrf() }, credentials: 'same-origin' });
  const answer = await r.json().catch(() => ({}));
  if (!r.ok || answer.result !== 'success') throw new Error(answer.msg || `HTTP ${r.status}`);
  return answer;
}

async function customEmoji(body) {
  const { emoji } = await api('GET', '/realm/emoji');
  const active = Object.values(emoji).filter((e) => !e.deactivated).sort((a, b) => a.name.localeCompare(b.name));
  const file = el('input', { type: 'file', accept: 'image/png,image/jpeg,image/gif,image/webp', name: 'file' });
  body.append(
    form('Add a custom emoji', [field('Emoji name', { name: 'name', required: true, placeholder: 'e.g. boathouse' }), el('label', {}, 'Emoji image ', file)],
      'Add emoji', async (f) => {
        if (!file.files[0]) throw new Error('Choose an image first.');
        const data = new FormData();
        data.append('file', file.files[0]);
        await postFile(`/realm/emoji/${encodeURIComponent(f.elements.name.value.trim())}`, data);
        redraw();
      }, 'Emoji added.'),
    active.length ? el('table', { class: 'grid' }, el('thead', {}, el('tr', {}, el('th', { text: 'Name' }), el('th', { text: 'Image' }), el('th', { text: 'Author' }), el('th', { text: 'Actions' }))),
      el('tbody', {}, active.map((e) => el('tr', {}, el('td', { text: `:${e.name}:` }),
        el('td', {}, el('img', { src: e.source_url, alt: `:${e.name}:`, width: 25, height: 25 })),
        el('td', { text: e.author_id ? userName(e.author_id) : '' }),
        el('td', {}, action(`Deactivate :${e.name}:`, () => api('DELETE', `/realm/emoji/${encodeURIComponent(e.name)}`).then(redraw), { class: 'danger' }))))))
      : el('p', { class: 'empty', text: 'No custom emoji.' }));
}

async function linkifiers(body) {
  const { linkifiers: list } = await api('GET', '/realm/linkifiers');
  const fields = (l = {}) => [field('Pattern', { name: 'pattern', required: true, value: l.pattern || '', placeholder: '#(?P<id>[0-9]+)' }),
    field('URL template', { name: 'url_template', required: true, value: l.url_template || '', placeholder: 'https://github.com/zulip/zulip/issues/{id}' })];
  const values = (f) => ({ pattern: f.elements.pattern.value.trim(), url_template: f.elements.url_template.value.trim() });
  body.append(
    form('Add a linkifier', fields(), 'Add linkifier', async (f) => {
      await api('POST', '/realm/filters', values(f));
      redraw();
    }, 'Linkifier added.'),
    list.length ? el('ul', { class: 'rows' }, list.map((l) => el('li', { 'aria-label': l.pattern },
      form(`Linkifier ${l.pattern}`, fields(l), 'Save linkifier', async (f) => {
        await api('PATCH', `/realm/filters/${l.id}`, values(f));
        redraw();
      }, 'Linkifier saved.'),
      action(`Remove ${l.pattern}`, () => api('DELETE', `/realm/filters/${l.id}`).then(redraw), { class: 'danger' }))))
      : el('p', { class: 'empty', text: 'No linkifiers.' }));
}

// The organization's user groups, as Zulip's User groups list has them:
// not the system groups (the roles), nor the deactivated ones.
async function userGroups(body) {
  const { user_groups: all } = await api('GET', '/user_groups');
  const groups = all.filter((g) => !g.is_system_group).sort((a, b) => a.name.localeCompare(b.name));
  const people = [...state.users.values()].filter((u) => !u.is_bot && u.is_active !== false).sort((a, b) => a.full_name.localeCompare(b.full_name));
  body.append(
    form('Create user group', [...groupInfo(), el('fieldset', {}, el('legend', { text: 'Choose members' }),
      people.map((u) => el('label', {}, el('input', { type: 'checkbox', name: 'members', value: u.user_id }), ` ${u.full_name}`)))],
    'Create', async (f) => {
      const members = [...f.querySelectorAll('[name=members]:checked')].map((c) => Number(c.value));
      await api('POST', '/user_groups/create', { name: f.elements.name.value.trim(), description: f.elements.description.value.trim(), members });
      redraw();
    }, 'User group created.'),
    groups.length ? el('ul', { class: 'rows' }, groups.map((g) => userGroup(g, people)))
      : el('p', { class: 'empty', text: 'There are no user groups you can view in this organization.' }));
}

// groupInfo is the name and description, as Zulip's group info form has them.
const groupInfo = (g = {}) => [field('User group name', { name: 'name', required: true, maxlength: 100, value: g.name || '', autocomplete: 'off' }),
  field('User group description', { name: 'description', maxlength: 1024, value: g.description || '', autocomplete: 'off' })];

function userGroup(g, people) {
  const members = `/user_groups/${g.id}/members`;
  const outside = people.filter((u) => !g.members.includes(u.user_id));
  const n = g.members.length;
  return el('li', { 'aria-label': g.name },
    el('h3', { text: g.name }), el('p', { class: 'muted', text: g.description || 'No description.' }),
    el('p', { text: `${n} ${n === 1 ? 'member' : 'members'}` }),
    form(`Change group info of ${g.name}`, groupInfo(g), 'Save changes', async (f) => {
      const changed = {};
      if (f.elements.name.value.trim() !== g.name) changed.name = f.elements.name.value.trim();
      if (f.elements.description.value.trim() !== g.description) changed.description = f.elements.description.value.trim();
      if (!Object.keys(changed).length) return;
      await api('PATCH', `/user_groups/${g.id}`, changed);
      redraw();
    }, 'Group info saved.'),
    outside.length ? form(`Add members to ${g.name}`, [el('label', {}, 'Person ', el('select', { name: 'user' }, outside.map((u) => el('option', { value: u.user_id, text: u.full_name }))))],
      'Add', async (f) => {
        await api('POST', members, { add: [Number(f.elements.user.value)] });
        redraw();
      }, 'Member added.') : null,
    n ? el('table', { class: 'grid', 'aria-label': `Members of ${g.name}` }, el('thead', {}, el('tr', {}, el('th', { text: 'Name' }), el('th', { text: 'Email' }), el('th', { text: 'Actions' }))),
      el('tbody', {}, g.members.map((id) => el('tr', {}, el('td', { text: userName(id) }), el('td', { text: state.users.get(id)?.email ?? '' }),
        el('td', {}, action(`Remove ${userName(id)}`, () => api('POST', members, { delete: [id] }).then(redraw)))))))
      : el('p', { class: 'empty', text: 'This group has no members.' }),
    // Zulip asks first (its deactivation-confirm-modal).
    action(`Deactivate ${g.name}`, () => confirm(`Deactivate ${g.name}?\n\nYou can always reactivate this group later.`)
      && api('POST', `/user_groups/${g.id}/deactivate`).then(redraw), { class: 'danger' }));
}
