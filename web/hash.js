// hash.js: every narrow has a URL, in Zulip's #narrow/... form
// (web/src/hash_util.ts, internal_url.ts), so that Back, a reload and a
// link pasted between zulite and Zulip open the same place:
// #narrow/channel/ID-name/topic/name, #narrow/dm/ID,ID-name,
// #narrow/search/text, each with /near/ID for one message; #feed for
// everything, #inbox for what is unread, #recent for Recent
// conversations (#recent_topics, its old name, too), #settings/... and
// #organization/... for the settings pages.

import { state, dmKey } from './state.js';

const replacements = { '%': '.', '(': '.28', ')': '.29', '.': '.2E' };

// encodeHashComponent hides the URI encoding from browsers that decode
// location.hash, as Zulip does: % becomes . (like MediaWiki).
export function encodeHashComponent(s) {
  return encodeURIComponent(s).replace(/[%().]/g, (c) => replacements[c]);
}

export function decodeHashComponent(s) {
  return decodeURIComponent(s.replace(/\./g, '%'));
}

// channelSlug is Zulip's stream_data.id_to_slug, encoded.
function channelSlug(id) {
  const name = state.channels.get(id)?.name ?? state.joinable.get(id)?.name ?? '';
  return encodeHashComponent(`${id}-${name.replaceAll(' ', '-')}`);
}

// dmSlug is Zulip's people.pm_with_url: the ids, then the one person's
// name or "group".
function dmSlug(key) {
  const ids = key.split(',');
  const suffix = ids.length > 1 ? 'group' : (state.users.get(Number(ids[0]))?.full_name ?? 'unk').replace(/[ "%/<>`\p{C}]+/gu, '-');
  return `${key}-${suffix}`;
}

export function hashOf(n, near) {
  const tail = near ? `/near/${near}` : '';
  switch (n.kind) {
    case 'channel': return `#narrow/channel/${channelSlug(n.channel)}${tail}`;
    case 'topic': return `#narrow/channel/${channelSlug(n.channel)}/topic/${encodeHashComponent(n.topic)}${tail}`;
    case 'dm': return `#narrow/dm/${dmSlug(n.key)}${tail}`;
    case 'search': return `#narrow/search/${encodeHashComponent(n.text)}${tail}`;
    case 'inbox': return '#inbox';
    case 'recent': return '#recent';
    case 'settings': return `#${n.tab}`;
    default: return '#feed';
  }
}

// narrowOf reads a URL's hash back: {narrow, near}, the whole feed for
// a hash it does not understand. A channel is found by the id its slug
// starts with, so a renamed channel's old links still open it.
export function narrowOf(hash) {
  const parts = hash.replace(/^#/, '').split('/');
  const out = { narrow: { kind: 'all' }, near: 0 };
  if (parts[0] === 'inbox') out.narrow = { kind: 'inbox' };
  if (parts[0] === 'recent' || parts[0] === 'recent_topics') out.narrow = { kind: 'recent' };
  // Zulip's settings overlays: #settings/profile, #organization/...
  if ((parts[0] === 'settings' || parts[0] === 'organization') && /^[a-z-]*$/.test(parts[1] || '')) {
    out.narrow = { kind: 'settings', tab: `${parts[0]}/${parts[1] || (parts[0] === 'settings' ? 'profile' : 'permissions')}` };
  }
  if (parts[0] !== 'narrow') return out;
  let channel = 0;
  let topic = null;
  try {
    for (let i = 1; i + 1 < parts.length; i += 2) {
      const [op, operand] = [parts[i], parts[i + 1]];
      if (op === 'channel' || op === 'stream') channel = parseInt(decodeHashComponent(operand), 10) || 0;
      else if (op === 'topic' || op === 'subject') topic = decodeHashComponent(operand);
      else if (op === 'dm' || op === 'pm-with') out.narrow = { kind: 'dm', key: dmKey(operand.split('-')[0].split(',')) };
      else if (op === 'search') out.narrow = { kind: 'search', text: decodeHashComponent(operand) };
      else if (op === 'near' || op === 'with') out.near = parseInt(operand, 10) || 0;
    }
  } catch {
    return out; // a malformed %-sequence
  }
  if (channel) out.narrow = topic === null ? { kind: 'channel', channel } : { kind: 'topic', channel, topic };
  return out;
}
