// The story of SPEC §1 told by the official Zulip JavaScript client,
// zulip-js, against a running zulite: every call exactly as an app makes
// it, each with a timeout, so that a hang is a failure.
//
// Environment: ZULITE_SITE (the server's base URL), ALICE_EMAIL,
// ALICE_PASSWORD, BOB_EMAIL, BOB_PASSWORD. Exits non-zero on the first
// failed step. Passwords and keys are never printed.
'use strict';

const zulipInit = require('zulip-js');
const assert = require('node:assert/strict');

const site = process.env.ZULITE_SITE;
const CALL_TIMEOUT_MS = 10000;

// call runs one client call, failing if it has not answered in time.
async function call(what, promise) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${CALL_TIMEOUT_MS} ms`)), CALL_TIMEOUT_MS);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function succeeded(what, res) {
  assert.equal(res.result, 'success', `${what}: got ${JSON.stringify(res)}, want success`);
  return res;
}

let passed = 0;
async function step(what, fn) {
  await fn();
  passed++;
  console.log(`ok ${passed} - ${what}`);
}

async function main() {
  let alice;
  let bob;
  let channelId;
  const token = 'c0ffee0123456789abcdef';
  const sent = [];
  let queue;
  let lastEventId = -1;

  await step('server.settings() before logging in', async () => {
    const anonymous = await zulipInit({ realm: site, username: 'nobody@example.com', apiKey: 'x' });
    const settings = succeeded('server_settings', await call('server.settings', anonymous.server.settings()));
    assert.ok(settings.zulip_feature_level >= 277, `feature level ${settings.zulip_feature_level}`);
    assert.equal(settings.authentication_methods.password, true);
    assert.equal(settings.realm_url, site);
  });

  await step('log in with username and password (zulip-js calls fetch_api_key)', async () => {
    alice = await call('login alice', zulipInit({ realm: site, username: process.env.ALICE_EMAIL, password: process.env.ALICE_PASSWORD }));
    bob = await call('login bob', zulipInit({ realm: site, username: process.env.BOB_EMAIL, password: process.env.BOB_PASSWORD }));
    assert.match(alice.config.apiKey || '', /^[A-Za-z0-9]{32}$/, 'alice got no API key');
    assert.match(bob.config.apiKey || '', /^[A-Za-z0-9]{32}$/, 'bob got no API key');
    const me = succeeded('users.me', await call('users.me.getProfile', alice.users.me.getProfile()));
    assert.equal(me.email, process.env.ALICE_EMAIL);
  });

  await step('subscribe to general', async () => {
    for (const client of [alice, bob]) {
      succeeded('subscribe', await call('users.me.subscriptions.add', client.users.me.subscriptions.add({
        subscriptions: JSON.stringify([{ name: 'general' }]),
      })));
    }
    const res = succeeded('get_stream_id', await call('streams.getStreamId', alice.streams.getStreamId('general')));
    channelId = res.stream_id;
    const subs = succeeded('subscriptions', await call('streams.subscriptions.retrieve', alice.streams.subscriptions.retrieve()));
    assert.ok(subs.subscriptions.some((s) => s.name === 'general'), 'general is not among the subscriptions');
  });

  await step('register an APNs token', async () => {
    succeeded('add token', await call('POST apns_device_token', alice.callEndpoint('/users/me/apns_device_token', 'POST', {
      token, appid: 'org.zulip.Zulip',
    })));
  });

  await step('queues.register: the unread state and a queue', async () => {
    queue = succeeded('register', await call('queues.register', alice.queues.register({
      event_types: ['message', 'update_message_flags'],
    })));
    assert.equal(typeof queue.queue_id, 'string');
    assert.equal(queue.unread_msgs.count, 0);
  });

  await step("another user's messages.send", async () => {
    for (const content of ['Lunch?', 'Pizza at noon', 'Or sushi']) {
      const res = succeeded('send', await call('messages.send', bob.messages.send({
        type: 'stream', to: 'general', topic: 'lunch', content,
      })));
      sent.push(res.id);
    }
  });

  await step('read the channel: three unread messages', async () => {
    const res = succeeded('messages', await call('messages.retrieve', alice.messages.retrieve({
      anchor: 'newest', num_before: 10, num_after: 0,
      narrow: [{ operator: 'channel', operand: 'general' }],
    })));
    assert.deepEqual(res.messages.map((m) => m.id), sent);
    for (const m of res.messages) {
      assert.ok(!m.flags.includes('read'), `message ${m.id} is not unread: ${m.flags}`);
      assert.equal(m.sender_email, process.env.BOB_EMAIL);
      assert.equal(m.subject, 'lunch');
    }
  });

  await step('events.retrieve: the three messages as events', async () => {
    const res = succeeded('events', await call('events.retrieve', alice.events.retrieve({
      queue_id: queue.queue_id, last_event_id: lastEventId, dont_block: true,
    })));
    assert.deepEqual(res.events.filter((e) => e.type === 'message').map((e) => e.message.id), sent);
    lastEventId = res.events[res.events.length - 1].id;
  });

  await step('messages.flags.add read on the first message', async () => {
    succeeded('flags', await call('messages.flags.add', alice.messages.flags.add({ flag: 'read', messages: [sent[0]] })));
    const res = succeeded('unread', await call('messages.retrieve', alice.messages.retrieve({
      anchor: 'oldest', num_before: 0, num_after: 10, narrow: [{ operator: 'is', operand: 'unread' }],
    })));
    assert.deepEqual(res.messages.map((m) => m.id), sent.slice(1));
  });

  await step('mark_stream_as_read', async () => {
    succeeded('mark', await call('mark_stream_as_read', alice.callEndpoint('/mark_stream_as_read', 'POST', { stream_id: channelId })));
    const res = succeeded('unread', await call('messages.retrieve', alice.messages.retrieve({
      anchor: 'oldest', num_before: 0, num_after: 10, narrow: [{ operator: 'is', operand: 'unread' }],
    })));
    assert.equal(res.messages.length, 0);
    const events = succeeded('events', await call('events.retrieve', alice.events.retrieve({
      queue_id: queue.queue_id, last_event_id: lastEventId, dont_block: true,
    })));
    const flags = events.events.filter((e) => e.type === 'update_message_flags');
    assert.deepEqual(flags.map((e) => e.messages), [[sent[0]], sent.slice(1)], 'one event per read change, with the ids that changed');
    lastEventId = events.events[events.events.length - 1].id;
  });

  await step('the narrow flags call, the replacement for mark_stream_as_read', async () => {
    const res = succeeded('send', await call('messages.send', bob.messages.send({
      type: 'stream', to: 'general', topic: 'dinner', content: 'And dinner?',
    })));
    const update = succeeded('flags/narrow', await call('messages/flags/narrow', alice.callEndpoint('/messages/flags/narrow', 'POST', {
      anchor: 'oldest', num_before: 0, num_after: 100,
      narrow: [{ operator: 'channel', operand: 'general' }],
      op: 'add', flag: 'read',
    })));
    assert.equal(update.processed_count, 4);
    assert.equal(update.updated_count, 1);
    assert.equal(update.last_processed_id, res.id);
  });

  await step('log out: DELETE the token, then the same DELETE again', async () => {
    succeeded('remove token', await call('DELETE apns_device_token', alice.callEndpoint('/users/me/apns_device_token', 'DELETE', { token })));
    const again = await call('DELETE apns_device_token again', alice.callEndpoint('/users/me/apns_device_token', 'DELETE', { token }));
    assert.deepEqual(again, { result: 'error', msg: 'Token does not exist', code: 'BAD_REQUEST' });
  });

  console.log(`${passed} passed, 0 failed`);
}

main().catch((err) => {
  console.error(`not ok ${passed + 1} - ${err.message}`);
  console.log(`${passed} passed, 1 failed`);
  process.exit(1);
});
