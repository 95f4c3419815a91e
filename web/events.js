// events.js: the one event loop. It registers a queue, long-polls it and
// hands each event on; on BAD_EVENT_QUEUE_ID (the server restarted or
// forgot the queue) and after a network drop it registers again and
// lets the page catch up from the state the new registration returns.

import { api, ApiError } from './api.js';

const eventTypes = ['message', 'update_message', 'delete_message', 'update_message_flags', 'reaction', 'subscription',
  'stream', 'realm_user', 'typing', 'presence', 'submessage', 'user_topic', 'muted_users', 'alert_words', 'user_status', 'user_group',
  'user_settings', 'drafts'];
// What register returns beyond the events' own state: the direct
// conversations for the sidebar, the realm's settings (the empty
// topic's name, whether topics are required, its permissions) and the
// system groups those permissions name. Not the drafts: the Drafts
// page reads them when it opens.
const fetchTypes = [...eventTypes.filter((t) => t !== 'drafts'), 'recent_private_conversations', 'realm', 'realm_user_groups'];

// backoff waits longer after each failure in a row, up to 10 s, with
// jitter so that pages a restart dropped do not return all at once.
const backoff = (n) => new Promise((r) => setTimeout(r, Math.min(10_000, 250 * 2 ** n) * (0.5 + Math.random() / 2)));

export class EventLoop {
  constructor({ onState, onEvent, onStatus }) {
    this.onState = onState;
    this.onEvent = onEvent;
    this.onStatus = onStatus;
    this.queueID = null;
    this.lastEventID = -1;
    this.stopped = false;
    this.controller = null;
  }

  async register() {
    const state = await api('POST', '/register', {
      event_types: eventTypes,
      fetch_event_types: fetchTypes,
      apply_markdown: true,
      client_gravatar: false,
      slim_presence: true,
      client_capabilities: { notification_settings_null: true, user_settings_object: true, bulk_message_deletion: true, user_avatar_url_field_optional: false, empty_topic_name: true, stream_typing_notifications: true },
    });
    this.queueID = state.queue_id;
    this.lastEventID = state.last_event_id;
    this.onStatus('');
    await this.onState(state);
  }

  async run() {
    let failures = 0;
    let lost = 0; // queues lost in a row: each new registration waits longer
    while (!this.stopped) {
      try {
        if (!this.queueID) {
          if (lost > 1) await backoff(lost - 1);
          await this.register();
        }
        this.controller = new AbortController();
        const timer = setTimeout(() => this.controller.abort(), 90_000);
        let body;
        try {
          body = await api('GET', '/events', { queue_id: this.queueID, last_event_id: String(this.lastEventID) }, { signal: this.controller.signal });
        } finally {
          clearTimeout(timer);
        }
        if (failures) this.onStatus('');
        failures = 0;
        lost = 0;
        for (const e of body.events) {
          this.lastEventID = Math.max(this.lastEventID, e.id);
          if (e.type !== 'heartbeat') this.onEvent(e);
        }
      } catch (err) {
        if (this.stopped) return;
        if (err instanceof ApiError && err.code === 'BAD_EVENT_QUEUE_ID') {
          this.queueID = null; // register again, at once the first time
          lost++;
          continue;
        }
        if (err instanceof ApiError && err.status === 401) {
          this.onStatus('logged-out');
          return;
        }
        failures++;
        this.onStatus('reconnecting');
        // After a drop the queue may be gone; a new registration catches
        // the page up either way.
        if (failures > 1) this.queueID = null;
        await backoff(failures);
      }
    }
  }

  stop() {
    this.stopped = true;
    if (this.controller) this.controller.abort();
    if (this.queueID) api('DELETE', '/events', { queue_id: this.queueID }).catch(() => {});
  }
}
