// events.js: the one event loop. It registers a queue, long-polls it and
// hands each event on; on BAD_EVENT_QUEUE_ID (the server restarted or
// forgot the queue) and after a network drop it registers again and
// lets the page catch up from the state the new registration returns.

import { api, ApiError } from './api.js';

const eventTypes = ['message', 'update_message', 'delete_message', 'update_message_flags', 'reaction', 'subscription',
  'stream', 'realm_user', 'typing', 'presence', 'submessage'];

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
      apply_markdown: true,
      client_gravatar: false,
      slim_presence: true,
      client_capabilities: { notification_settings_null: true, bulk_message_deletion: true, user_avatar_url_field_optional: false, empty_topic_name: true },
    });
    this.queueID = state.queue_id;
    this.lastEventID = state.last_event_id;
    this.onStatus('');
    await this.onState(state);
  }

  async run() {
    let failures = 0;
    while (!this.stopped) {
      try {
        if (!this.queueID) await this.register();
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
        for (const e of body.events) {
          this.lastEventID = Math.max(this.lastEventID, e.id);
          if (e.type !== 'heartbeat') this.onEvent(e);
        }
      } catch (err) {
        if (this.stopped) return;
        if (err instanceof ApiError && err.code === 'BAD_EVENT_QUEUE_ID') {
          this.queueID = null; // register again at once
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
        await new Promise((r) => setTimeout(r, Math.min(10_000, 250 * 2 ** failures) * (0.5 + Math.random() / 2)));
      }
    }
  }

  stop() {
    this.stopped = true;
    if (this.controller) this.controller.abort();
    if (this.queueID) api('DELETE', '/events', { queue_id: this.queueID }).catch(() => {});
  }
}
