// state.js: what the page knows, filled from POST /register and kept
// current by events.

export const state = {
  me: null, // {user_id, email, full_name}
  realmName: 'zulite', // server_settings' realm_name
  registered: null, // the last POST /register answer, kept current for the settings pages
  isAdmin: false,
  users: new Map(), // id → {user_id, full_name, email, is_bot, is_active}
  channels: new Map(), // subscribed: id → {stream_id, name, color}
  joinable: new Map(), // channels one could join: id → {stream_id, name}
  topics: new Map(), // channel id → Map(lower-cased name → {name, maxID})
  unread: new Map(), // message id → {channel, topic} | {dm: key}
  dms: new Map(), // key → {ids, maxID}
  active: new Map(), // user id → last active, ms
  narrow: { kind: 'all' },
  near: 0, // the message a #narrow/.../near/ID link points at
  emptyTopicName: 'general chat', // realm_empty_topic_display_name
  mandatoryTopics: false, // realm_mandatory_topics
};

// topicName is a topic as the page shows it: the empty topic under the
// organisation's name for it, everywhere, as Zulip's web app does.
export function topicName(topic) {
  return topic === '' ? state.emptyTopicName : topic;
}

// dmKey names a conversation by its other members' ids (oneself for a
// note to self), sorted.
export function dmKey(ids) {
  const others = [...new Set(ids.map(Number))].filter((id) => id !== state.me.user_id).sort((a, b) => a - b);
  return others.length ? others.join(',') : String(state.me.user_id);
}

export function messageDMKey(m) {
  return dmKey(m.display_recipient.map((r) => r.id));
}

export function userName(id) {
  const u = state.users.get(Number(id));
  return u ? u.full_name : `user ${id}`;
}

export function dmTitle(key) {
  return key.split(',').map(userName).join(', ');
}

export function noteTopic(channelID, topic, messageID) {
  let topics = state.topics.get(channelID);
  if (!topics) state.topics.set(channelID, (topics = new Map()));
  const t = topics.get(topic.toLowerCase());
  if (!t || t.maxID < messageID) topics.set(topic.toLowerCase(), { name: topic, maxID: messageID });
}

export function noteDM(key, messageID) {
  const d = state.dms.get(key);
  if (!d || d.maxID < messageID) state.dms.set(key, { maxID: messageID });
}

// narrowFilter is a narrow as GET /messages takes it.
export function narrowFilter(n) {
  switch (n.kind) {
    case 'channel': return [{ operator: 'channel', operand: n.channel }];
    case 'topic': return [{ operator: 'channel', operand: n.channel }, { operator: 'topic', operand: n.topic }];
    case 'dm': return [{ operator: 'dm', operand: n.key.split(',').map(Number) }];
    case 'search': return [{ operator: 'search', operand: n.text }];
    default: return [];
  }
}

// inNarrow tells whether a new message belongs on the screen.
export function inNarrow(m, n = state.narrow) {
  switch (n.kind) {
    case 'all': return true;
    case 'channel': return m.type === 'stream' && m.stream_id === n.channel;
    case 'topic': return m.type === 'stream' && m.stream_id === n.channel && m.subject.toLowerCase() === n.topic.toLowerCase();
    case 'dm': return m.type === 'private' && messageDMKey(m) === n.key;
    default: return false;
  }
}

export function unreadWhere(m) {
  return m.type === 'stream' ? { channel: m.stream_id, topic: m.subject } : { dm: messageDMKey(m) };
}
