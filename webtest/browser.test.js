// zulite's web page in headless Chromium, two people in two browser
// contexts. Run by web_browser_test.go, which starts the binary and sets
// ZULITE_SITE, CHROMIUM, OUT_DIR and the accounts; it restarts the server
// when this script prints "RESTART" and answers "RESTARTED" on stdin.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createInterface } from 'node:readline';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { crc32, deflateSync } from 'node:zlib';
import { createRequire } from 'node:module';
import puppeteer from 'puppeteer-core';

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

const site = process.env.ZULITE_SITE;
const out = process.env.OUT_DIR;
const alice = { email: process.env.ALICE_EMAIL, password: process.env.ALICE_PASSWORD };
const bob = { email: process.env.BOB_EMAIL, password: process.env.BOB_PASSWORD };
const realm = process.env.REALM_NAME || 'zulite';
const stdin = createInterface({ input: process.stdin });
const lines = stdin[Symbol.asyncIterator]();
const timeout = 10_000;

function report(name, value) {
  console.log(`BUDGET ${name} ${value}`);
}

async function open(browser, who) {
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  page.setDefaultTimeout(timeout);
  await page.setViewport({ width: 1280, height: 800 });
  page.problems = [];
  // An error thrown by puppeteer's own query code in the page (see
  // inside) is the harness's, not the page's.
  page.on('pageerror', (err) => { if (!String(err.stack).includes('pptr:internal')) page.problems.push(`page error: ${err.message}`); });
  page.on('console', (m) => {
    if (m.type() === 'error' && !/Failed to load resource|ERR_CONNECTION_REFUSED|ERR_EMPTY_RESPONSE|net::/.test(m.text())) page.problems.push(`console: ${m.text()}`);
  });
  await page.goto(site, { waitUntil: 'load' });
  await page.waitForSelector('#login-form:not([hidden])', { timeout });
  await page.waitForSelector(`::-p-aria([name="Log in to ${realm}"][role="heading"])`, { timeout });
  await page.locator('#login-email').fill(who.email);
  await page.locator('#login-password').fill(who.password);
  await page.click('#login-form button[type=submit]');
  await page.waitForSelector('#app-view:not([hidden]) #channels li', { timeout });
  return page;
}

const waitText = (page, selector, want) => page.waitForFunction((s, w) => [...document.querySelectorAll(s)].some((n) => n.textContent.includes(w)), { timeout }, selector, want);
const badge = (page, channel) => page.evaluate((c) => document.querySelector(`#channels li[data-channel="${c}"] .badge`)?.textContent ?? '', channel);

async function send(page, content) {
  await page.locator('#compose-text').fill(content);
  await page.focus('#compose-text');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => document.querySelector('#compose-text').value === '' || document.querySelector('#compose-error').textContent !== '', { timeout });
  return page.$eval('#compose-error', (n) => n.textContent);
}

// press clicks in the page itself: the sidebar is redrawn as events
// arrive, so a handle found a moment before may be gone.
const press = (page, selector) => page.waitForSelector(selector).then(() => page.$eval(selector, (n) => n.click()));

// again runs a step of puppeteer's once more when it failed on the page
// changing under it: a reload under way loses its execution context, and
// a node or a selector's part can go between the query and the use
// (seen on a loaded machine). Any other failure is the step's.
async function again(step) {
  for (let tries = 1; ; tries++) {
    try {
      return await step();
    } catch (err) {
      if (tries === 3 || !/Cannot find context with specified id|does not belong to the document|Execution context was destroyed|is not a valid selector|Node is detached/.test(err.message)) throw err;
      await pause(250);
    }
  }
}

// go clicks a sidebar entry until the page shows its view: the sidebar
// is drawn anew as events arrive, and a click on an entry as it is
// replaced does nothing (a person would click again).
async function go(page, selector, narrow) {
  for (let tries = 1; ; tries++) {
    await page.locator(selector).click();
    try {
      return await page.waitForFunction((t) => document.title === t, { timeout: 2000 }, `${narrow} · ${realm}`);
    } catch (err) {
      if (tries === 5) throw err;
    }
  }
}

// Found as a person finds them: by role and accessible name, or text.
const named = (name, role) => `::-p-aria([name=${JSON.stringify(name)}]${role ? `[role="${role}"]` : ''})`;
const byText = (text) => `::-p-text(${text})`;
// inside waits for the element found by inner within the one found by
// outer, looking for both afresh each time: the outer one may be drawn
// anew meanwhile (a wait inside its old handle would never end), and a
// descendant p-aria selector ('outer inner') can throw in the page as
// the DOM changes, a locator built on one then waiting out its timeout.
async function inside(page, outer, inner) {
  let last;
  for (const end = Date.now() + timeout; Date.now() < end; await pause(100)) {
    try {
      const found = await (await page.$(outer))?.$(inner);
      if (found) return found;
    } catch (err) {
      last = err;
    }
  }
  throw new Error(`${inner} inside ${outer}: not found in ${timeout} ms${last ? ` (${last.message})` : ''}`);
}
const toText = (page) => page.$eval(named('To'), (s) => s.selectedOptions[0]?.textContent ?? '');
const valueOf = (page, name) => page.$eval(named(name), (n) => n.value);
// titled waits for the window's title: the narrow, then the organisation.
const titled = (page, narrow) => page.waitForFunction((t) => document.title === t, { timeout }, `${narrow} · ${realm}`);
const pause = (ms) => new Promise((r) => setTimeout(r, ms));
// call runs one of the page's API calls in the page, with its session.
const call = (page, method, path, params) => page.evaluate(async (m, p, q) => (await import('/web/api.js')).api(m, p, q), method, path, params);

// axeViolations runs axe-core in a theme: the critical and serious
// violations, each with its first two places.
async function axeViolations(page, theme) {
  await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: theme }]);
  await page.evaluate(axeSource);
  return page.evaluate(async () => (await window.axe.run(document, { resultTypes: ['violations'] })).violations
    .filter((v) => v.impact === 'critical' || v.impact === 'serious')
    .map((v) => `${v.id} (${v.impact}, ${v.nodes.length}): ${v.nodes.slice(0, 2).map((n) => n.target.join(' ')).join('; ')}`));
}

// openSettings opens a settings page from the Settings link and the
// page's tab of that name.
async function openSettings(page, tab) {
  await page.locator(named('Settings', 'link')).click();
  await page.locator(named(tab, 'link')).click();
  await page.waitForSelector(`::-p-aria([name=${JSON.stringify(tab)}][role="heading"])`);
}

// tabTo presses Tab (Shift+Tab when back) until the focus is on one of
// the controls the selector finds, or on the control holding it.
async function tabTo(page, selector, back = false) {
  for (let i = 0; i < 200; i++) {
    const found = await page.$$(selector);
    const reached = await page.evaluate((...ns) => {
      const f = document.activeElement;
      return f !== document.body && ns.some((n) => n === f || f?.contains(n));
    }, ...found);
    if (reached) return;
    if (back) await page.keyboard.down('Shift');
    await page.keyboard.press('Tab');
    if (back) await page.keyboard.up('Shift');
  }
  assert.fail(`${selector}: not reached by ${back ? 'Shift+' : ''}Tab`);
}

async function narrowTo(page, channel) {
  await press(page, `#channels li[data-channel="${channel}"] > button`);
  await page.waitForFunction((c) => document.querySelector('#narrow-title').textContent === `#${c}` && !document.querySelector('#messages[aria-busy]'), { timeout }, channel);
}

test('two people chat in the browser', { timeout: 360_000 }, async (t) => {
  const browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  t.after(async () => {
    stdin.close();
    await browser.close();
  });
  let a, b;
  t.afterEach(async (st) => {
    // The screen after each step, for whoever reads a failure.
    const step = st.name.replace(/[^a-z0-9]+/gi, '-').slice(0, 40);
    for (const [who, page] of [['alice', a], ['bob', b]]) await page?.screenshot({ path: join(out, `step-${step}-${who}.png`) }).catch(() => {});
  });

  await t.test('log in, join, and the owner adds a channel and a person', async () => {
    a = await open(browser, alice);
    b = await open(browser, bob);
    for (const page of [a, b]) {
      await press(page, '#joinable li[data-channel="general"] button');
      await page.waitForSelector('#channels li[data-channel="general"]', { timeout });
    }
    // The organisation's forms are on the settings pages, for its
    // administrators only.
    await b.locator(named('Settings', 'link')).click();
    await b.waitForSelector(named('Personal settings', 'heading'));
    assert.equal(await b.$(named('Organization settings', 'heading')), null, 'a member has no organization settings');
    await b.locator(named(`#general`, 'button')).click();
    await openSettings(a, 'Channels');
    await a.locator(named('New channel')).fill('random');
    await a.locator(named('Create channel', 'button')).click();
    await a.waitForSelector(byText('Channel created.'));
    await a.waitForSelector('#channels li[data-channel="random"]', { timeout });
    await b.waitForSelector('#joinable li[data-channel="random"]', { timeout });
    await openSettings(a, 'Users');
    await a.locator(named('Name', 'textbox')).fill('Carol');
    await a.locator(named('E-mail', 'textbox')).fill('carol@example.com');
    await a.locator(named('Password')).fill('carol-password-1');
    await a.locator(named('Add person', 'button')).click();
    await a.waitForSelector(byText('Added: they can now log in.'));
    await a.waitForSelector(`::-p-aria([name="Carol"][role="cell"])`);
    const carol = await open(browser, { email: 'carol@example.com', password: 'carol-password-1' });
    // A new person's first message goes nowhere until they choose,
    // and the first channel they join becomes where it goes.
    assert.equal(await toText(carol), 'Choose a channel or people');
    await carol.locator(named('Join #general', 'button')).click();
    await carol.waitForFunction((s) => document.querySelector(s)?.selectedOptions[0]?.textContent === '#general', { timeout }, 'select[aria-label="To"]');
    await carol.browserContext().close();
  });

  await t.test('page to first message list', async () => {
    await narrowTo(a, 'general');
    await a.reload({ waitUntil: 'load' });
    await a.waitForFunction(() => performance.getEntriesByName('zulite:first-message-list').length > 0, { timeout });
    const ms = await a.evaluate(() => performance.getEntriesByName('zulite:first-message-list')[0].startTime);
    report('page_to_first_message_list_ms', ms.toFixed(0));
    await a.waitForSelector('#channels li[data-channel="general"]', { timeout });
  });

  let messageID;
  await t.test('a message arrives, its unread count rises and falls', async () => {
    await narrowTo(a, 'general');
    await b.locator('#search').fill('nothing-matches-this');
    await b.keyboard.press('Enter');
    await a.locator('#compose-topic').fill('greetings');
    assert.equal(await send(a, 'Hello **Bob**, from the browser'), '');
    await a.waitForSelector('#messages .msg', { timeout });
    messageID = await a.$eval('#messages .msg:last-child', (n) => n.dataset.id);
    await b.waitForFunction(() => document.querySelector('#channels li[data-channel="general"] .badge')?.textContent === '1', { timeout });
    await narrowTo(b, 'general');
    await waitText(b, `#messages .msg[data-id="${messageID}"] .content`, 'Hello Bob, from the browser');
    assert.ok(await b.$eval(`#messages .msg[data-id="${messageID}"] .content strong`, (n) => n.textContent === 'Bob'), 'the server rendered the Markdown');
    await b.waitForFunction(() => !document.querySelector('#channels li[data-channel="general"] .badge'), { timeout });
    await a.waitForSelector('#typing', { timeout });
  });

  await t.test('a reaction reaches the sender', async () => {
    await b.click(`#messages .msg[data-id="${messageID}"] .react`);
    await b.waitForSelector(`#messages .msg[data-id="${messageID}"] .picker button[aria-label="+1"]`);
    await b.click(`#messages .msg[data-id="${messageID}"] .picker button[aria-label="+1"]`);
    await a.waitForFunction((id) => document.querySelector(`#messages .msg[data-id="${id}"] .reaction .count`)?.textContent === '1', { timeout }, messageID);
  });

  await t.test('@-mention and channel autocomplete', async () => {
    await a.focus('#compose-text');
    await a.keyboard.type('ping @bo');
    await a.waitForSelector('#autocomplete:not([hidden]) li', { timeout });
    await a.keyboard.press('Enter');
    assert.match(await a.$eval('#compose-text', (n) => n.value), /^ping @\*\*[^*]+\*\* $/);
    await a.keyboard.type('in #ra');
    await a.waitForSelector('#autocomplete:not([hidden]) li', { timeout });
    await a.keyboard.press('Tab');
    assert.match(await a.$eval('#compose-text', (n) => n.value), /#\*\*random\*\* $/);
    await a.keyboard.down('Shift');
    await a.keyboard.press('Enter');
    await a.keyboard.up('Shift');
    assert.match(await a.$eval('#compose-text', (n) => n.value), /\n$/, 'Shift+Enter breaks the line');
    await a.keyboard.press('Enter');
    await waitText(b, '#messages .msg .content', 'ping');
    await b.waitForSelector(named('Alice, mentioning you: message', 'article'));
  });

  await t.test('a message mentioning you stands out from the others, light and dark', async () => {
    const mention = await b.waitForSelector(named('Alice, mentioning you: message', 'article'));
    // Read, and nothing focused: only the mention sets it apart.
    await b.waitForFunction((n) => !n.classList.contains('unread'), { timeout }, mention);
    await b.evaluate(() => document.activeElement?.blur());
    for (const theme of ['light', 'dark']) {
      await b.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: theme }]);
      const [mentioned, plain] = await b.evaluate((m) => [m, [...document.querySelectorAll('[role=feed] article')].find((n) => n.textContent.includes('Hello Bob, from the browser'))]
        .map((n) => getComputedStyle(n).backgroundColor), mention);
      assert.notEqual(mentioned, plain, `the mention's background is an ordinary message's, ${theme} theme`);
    }
    await b.emulateMediaFeatures([]);
  });

  await t.test('a reload keeps the place, the conversations and the topics', async () => {
    await narrowTo(a, 'general');
    await a.locator(named('greetings', 'button')).click();
    await a.waitForFunction(() => /^#narrow\/channel\/\d+-general\/topic\/greetings$/.test(location.hash), { timeout });
    await a.reload({ waitUntil: 'load' });
    await titled(a, '#general › greetings');
    await a.goBack();
    await titled(a, '#general');
    // Bob learns one topic live after a reload; the sidebar still has
    // the older ones.
    await b.goto(`${site}/#narrow/search/nothing-here`); // where new messages do not show
    await b.reload({ waitUntil: 'load' });
    await b.waitForSelector(named('#general', 'button'));
    await a.locator(named('Topic')).fill('late news');
    assert.equal(await send(a, 'A late message'), '');
    await b.waitForSelector(named('#general 1 unread', 'button'));
    await b.locator(named('#general 1 unread', 'button')).click();
    await b.waitForSelector(named('greetings', 'button'));
    // A pasted link opens the message it points at.
    const channelID = await a.evaluate(() => location.hash.split('/')[2]);
    await b.goto(`${site}/#narrow/channel/${channelID}/topic/greetings/near/${messageID}`, { waitUntil: 'load' });
    await b.waitForFunction((id) => document.activeElement?.dataset.id === id && document.activeElement.getAttribute('role') !== 'feed', { timeout }, messageID);
    assert.match(await b.evaluate(() => document.activeElement.textContent), /Hello Bob, from the browser/);
  });

  await t.test('live: channel typing, a move, a failed mark-as-read', async () => {
    await b.locator(named('#general', 'button')).click();
    await b.locator(named('greetings', 'button')).click();
    await titled(b, '#general › greetings');
    await a.locator(named('greetings', 'button')).click();
    await a.locator(named('Message')).click();
    await a.keyboard.type('thinking');
    await b.waitForSelector(byText('Alice is typing…'));
    // Alice turns to another topic and types on: "stop" goes to where
    // "start" went, then "start" to the new topic, and her typing there
    // does not show in this topic's view.
    const told = [];
    const tell = (r) => r.url().endsWith('/json/typing') && told.push(Object.fromEntries(new URLSearchParams(r.postData() ?? '')));
    a.on('request', tell);
    await a.locator(named('Topic')).fill('elsewhere');
    await a.locator(named('Message')).click();
    await a.keyboard.type(' more');
    for (let i = 0; i < 20 && told.length < 2; i++) await pause(100);
    a.off('request', tell);
    assert.deepEqual(told.map((t) => `${t.op} ${t.topic}`).slice(0, 2), ['stop greetings', 'start elsewhere'], 'what Alice told of her typing');
    await b.waitForFunction(() => !document.querySelector('#typing')?.textContent, { timeout: 3000 });
    await a.keyboard.type(' and more');
    await pause(1000);
    assert.equal(await b.$eval('#typing', (n) => n.textContent), '', 'typing in another topic shows in this topic\'s view');
    await a.locator(named('Message')).fill('');
    await a.locator(named('Topic')).fill('greetings');
    // Moved to another topic, the message leaves this one.
    await call(a, 'PATCH', `/messages/${messageID}`, { topic: 'moved here', propagate_mode: 'change_one' });
    await b.waitForFunction((id) => !document.querySelector(`[role=feed] article[data-id="${id}"]`), { timeout }, messageID);
    await b.waitForSelector(named('moved here', 'button'));
    // Moved to another channel, a message leaves this channel's view and
    // is found in the other's.
    const randomID = (await call(a, 'GET', '/get_stream_id?stream=random')).stream_id;
    assert.equal(await send(a, 'Off to random'), '');
    await waitText(a, '[role=feed] article', 'Off to random');
    const offID = await a.$$eval('[role=feed] article', (ns) => ns.at(-1).dataset.id);
    await call(a, 'PATCH', `/messages/${offID}`, { stream_id: randomID, propagate_mode: 'change_one' });
    await a.waitForFunction((id) => !document.querySelector(`[role=feed] article[data-id="${id}"]`), { timeout }, offID);
    await a.locator(named('#random', 'button')).click();
    await titled(a, '#random');
    await waitText(a, `[role=feed] article[data-id="${offID}"]`, 'Off to random');
    await a.locator(named('#general', 'button')).click();
    await a.locator(named('greetings', 'button')).click();
    await titled(a, '#general › greetings');
    // The first mark-as-read fails; it is sent again.
    let failed = 0;
    const fail = (r) => (r.url().includes('/messages/flags') && !failed++ ? r.abort() : r.continue());
    b.on('request', fail);
    await b.setRequestInterception(true);
    await a.locator(named('Topic')).fill('greetings');
    assert.equal(await send(a, 'Read me twice'), '');
    await waitText(b, '[role=feed] article', 'Read me twice');
    const id = await b.$$eval('[role=feed] article', (ns) => ns.at(-1).dataset.id);
    let flags = [];
    for (let i = 0; i < 40 && !flags.includes('read'); i++) {
      await pause(250);
      flags = (await call(b, 'GET', `/messages/${id}`)).message.flags;
    }
    assert.ok(flags.includes('read'), `the server has it read (flags ${flags}, ${failed} requests)`);
    assert.ok(failed >= 2, 'a failed request was tried again');
    b.off('request', fail);
    // A queue lost again and again: each new registration waits longer.
    let registers = 0;
    const lose = (r) => {
      if (r.url().includes('/json/register')) registers++;
      if (!r.url().includes('/json/events') || r.method() !== 'GET') return r.continue();
      return r.respond({ status: 400, contentType: 'application/json', body: JSON.stringify({ result: 'error', code: 'BAD_EVENT_QUEUE_ID', msg: 'Bad event queue ID: lost', queue_id: 'lost' }) });
    };
    b.on('request', lose);
    assert.equal(await send(a, 'This wakes the waiting poll'), '');
    await pause(3000);
    b.off('request', lose);
    // A request caught as interception ends goes through without it.
    b.on('request', (r) => r.continue().catch(() => {}));
    assert.ok(registers >= 1 && registers <= 8, `${registers} registrations in 3 s`);
    await b.setRequestInterception(false);
    b.removeAllListeners('request');
  });

  await t.test('a queue lost again and again: each registration waits longer than the one before', async () => {
    // A page loaded afresh, not one still waiting after the step
    // before, and polling its queue.
    const polling = b.waitForRequest((r) => r.url().includes('/json/events?') && r.method() === 'GET', { timeout });
    await b.reload({ waitUntil: 'load' });
    await polling;
    await titled(b, '#general › greetings');
    const registered = [];
    const lose = (r) => {
      if (r.url().endsWith('/json/register')) registered.push(Date.now());
      if (!r.url().includes('/json/events') || r.method() !== 'GET') return r.continue();
      return r.respond({ status: 400, contentType: 'application/json', body: JSON.stringify({ result: 'error', code: 'BAD_EVENT_QUEUE_ID', msg: 'Bad event queue ID: lost', queue_id: 'lost' }) });
    };
    b.on('request', lose);
    await b.setRequestInterception(true);
    assert.equal(await send(a, 'This wakes the waiting poll again'), '');
    for (let i = 0; i < 80 && registered.length < 4; i++) await pause(100);
    // Let the page through; a request caught as interception ends goes
    // through without it.
    const pass = (r) => r.continue().catch(() => {});
    b.off('request', lose);
    b.on('request', pass);
    const waits = registered.slice(1, 4).map((at, i) => at - registered[i]);
    assert.equal(waits.length, 3, `${registered.length} registrations in 8 s`);
    // Doubled each time, with jitter: each wait is the one before's or
    // longer, and the third is well past the first.
    assert.ok(waits.every((w, i) => i === 0 || w > waits[i - 1] - 100) && waits[2] - waits[0] > 300, `the waits between registrations (ms): ${waits}`);
    await b.setRequestInterception(false);
    b.off('request', pass);
    // Live again, whether the poll after the last registration was lost
    // (one more registration) or went through (none): a message sent
    // now reaches the page. (Waiting for a registration raced: the last
    // one's answer could come before the wait began.)
    assert.equal(await send(a, 'Back after the lost queues'), '');
    await waitText(b, '#messages .msg .content', 'Back after the lost queues');
  });

  await t.test('a direct message both ways (when the server has them)', async (st) => {
    const to = await a.$$eval('#compose-to option', (os) => os.find((o) => o.value.startsWith('d:') && o.textContent === 'Bob')?.value);
    assert.ok(to, 'Bob is among the people one can write to');
    await a.select('#compose-to', to);
    const error = await send(a, 'A direct hello to Bob');
    if (error) {
      await a.locator('#compose-text').fill('');
      st.skip(`direct messages are not served yet: ${error}`);
      console.log(`SKIP dm: ${error}`);
      return;
    }
    await b.waitForFunction(() => [...document.querySelectorAll('#dms li')].some((n) => n.querySelector('.badge')), { timeout });
    await press(b, '#dms li button');
    await waitText(b, '#messages .msg .content', 'A direct hello to Bob');
    assert.equal(await send(b, 'And back to Alice'), '');
    await a.waitForFunction(() => [...document.querySelectorAll('#dms li')].length > 0, { timeout });
    await press(a, '#dms li button');
    await waitText(a, '#messages .msg .content', 'And back to Alice');
  });

  await t.test('a group conversation is started and answered', async () => {
    await a.select(named('To'), 'g:');
    await a.locator(named('People')).fill('Bob, Carol');
    assert.equal(await send(a, 'Hello to you both'), '');
    await b.locator(byText('Alice, Carol')).click();
    await titled(b, 'Alice, Carol');
    await b.waitForFunction(() => document.querySelector('[role=feed]').textContent.includes('Hello to you both'), { timeout });
    assert.equal(await send(b, 'Hello from Bob to the group'), '');
    await a.locator(byText('Bob, Carol')).click();
    await a.waitForFunction((s) => document.querySelector(s).textContent.includes('Hello from Bob to the group'), { timeout }, '[role=feed]');
  });

  await t.test('after a reload, the direct conversations are listed', async () => {
    await b.reload({ waitUntil: 'load' });
    await b.waitForSelector(named('#general', 'button'));
    await b.waitForSelector(named('Alice, Carol', 'button'));
    await b.waitForSelector(named('Alice', 'button'));
  });

  await t.test('an upload', async () => {
    await narrowTo(a, 'general');
    await narrowTo(b, 'general'); // both leave the conversation of the step before
    const file = join(out, 'note.txt');
    writeFileSync(file, 'an uploaded note\n');
    const input = await a.$('#compose-file');
    await input.uploadFile(file);
    await a.waitForFunction(() => /\]\(\/user_uploads\//.test(document.querySelector('#compose-text').value), { timeout });
    assert.equal(await send(a, await a.$eval('#compose-text', (n) => n.value)), '');
    await b.waitForSelector('#messages .msg .content a[href*="/user_uploads/"]', { timeout });
    const href = await b.$eval('#messages .msg:last-child .content a[href*="/user_uploads/"]', (n) => n.getAttribute('href'));
    const body = await b.evaluate(async (h) => (await fetch(h)).text(), href);
    assert.equal(body, 'an uploaded note\n', 'the session opens the upload');
  });

  await t.test('an edit (when the server has it)', async (st) => {
    // The upload of the step before is Alice's last message on her page
    // too, not only on Bob's.
    await a.waitForFunction(() => [...document.querySelectorAll('#messages .msg.mine')].at(-1)?.querySelector('.content a[href*="/user_uploads/"]'), { timeout });
    const id = await a.$$eval('#messages .msg.mine', (ns) => ns.at(-1).dataset.id);
    await press(a, `#messages .msg[data-id="${id}"] .edit`);
    const error = await send(a, 'An edited note');
    if (error) {
      await a.keyboard.press('Escape');
      await a.locator('#compose-text').fill('');
      st.skip(`message edits are not served yet: ${error}`);
      console.log(`SKIP edit: ${error}`);
      return;
    }
    await waitText(b, `#messages .msg[data-id="${id}"] .content`, 'An edited note');
  });

  await t.test('Edit keeps the draft, and Esc then Enter sends nothing', async () => {
    const count = () => a.$$eval('[role=feed] article', (ns) => ns.length);
    const before = await count();
    await a.locator(named('Message')).fill('half a thought');
    const edits = await a.$$(named('Edit', 'button'));
    await edits.at(-1).click();
    await a.waitForFunction((s) => document.querySelector(s).value === 'An edited note', { timeout }, 'textarea[aria-label="Message"]');
    await a.keyboard.press('Escape');
    assert.equal(await valueOf(a, 'Message'), 'half a thought');
    await a.locator(named('Message')).fill('');
    await (await a.$$(named('Edit', 'button'))).at(-1).click();
    await a.keyboard.press('Escape');
    await a.locator(named('Message')).click();
    await a.keyboard.press('Enter');
    await pause(500);
    assert.equal(await count(), before, 'nothing was sent');
  });

  await t.test('a blank topic is the general chat, under one name everywhere', async () => {
    await narrowTo(a, 'general');
    await a.locator(named('Topic')).fill('');
    assert.equal(await send(a, 'Nothing in particular'), '');
    await a.waitForFunction((s) => [...document.querySelectorAll(s)].some((n) => n.textContent.includes('#general › general chat') && n.textContent.includes('Nothing in particular')), { timeout }, '[role=feed] article');
    await a.waitForSelector(named('general chat', 'button'));
    await a.reload({ waitUntil: 'load' });
    await a.waitForSelector(named('general chat', 'button'));
    await a.waitForFunction((s) => [...document.querySelectorAll(s)].some((n) => n.textContent.includes('#general › general chat')), { timeout }, '[role=feed] article');
  });

  await t.test('a poll: a vote reaches every reader', async () => {
    await a.$eval('#compose-text', (n) => { n.value = '/poll Lunch?\npizza\nsushi'; });
    await a.focus('#compose-text');
    await a.keyboard.press('Enter');
    await a.waitForSelector('#messages .msg:last-child .poll', { timeout });
    const id = await a.$eval('#messages .msg:last-child', (n) => n.dataset.id);
    await b.waitForSelector(`#messages .msg[data-id="${id}"] .poll li:nth-child(2) button.vote`, { timeout });
    assert.equal(await b.$eval(`#messages .msg[data-id="${id}"] .poll .question`, (n) => n.textContent), 'Lunch?');
    await press(b, `#messages .msg[data-id="${id}"] .poll li:nth-child(2) button.vote`);
    await a.waitForFunction((i) => document.querySelector(`#messages .msg[data-id="${i}"] .poll li:nth-child(2) .count`)?.textContent === '1', { timeout }, id);
    await b.waitForSelector(`#messages .msg[data-id="${id}"] .poll li:nth-child(2) button.vote.mine`, { timeout });
  });

  await t.test('hostile content does nothing', async () => {
    await a.locator('#compose-topic').fill('</script><script>window.pwned = 3</script>');
    assert.equal(await send(a, '<img src=x onerror="window.pwned=1"> [click me](javascript:window.pwned=2) <script>window.pwned=4</script>'), '');
    await waitText(b, '#messages .msg .content', 'click me');
    const hostile = await b.$$eval('#messages .msg', (ns) => ns.at(-1).dataset.id);
    assert.equal(await b.$(`#messages .msg[data-id="${hostile}"] img[onerror]`), null, 'no img with onerror');
    assert.equal(await b.$(`#messages .msg[data-id="${hostile}"] script`), null, 'no script element');
    const link = await b.$(`#messages .msg[data-id="${hostile}"] a[href^="javascript:"]`);
    assert.equal(link, null, 'no javascript: link');
    const anchors = await b.$$(`#messages .msg[data-id="${hostile}"] .content a`);
    for (const anchor of anchors) await anchor.click().catch(() => {});
    await press(b, '#channels li[data-channel="general"] > button');
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(await b.evaluate(() => window.pwned), undefined, 'nothing ran');
    assert.ok(await b.$$eval('#channels .topics li', (ns) => ns.some((n) => n.textContent.includes('</script>'))), 'the topic shows as text');
  });

  await t.test('keys: j/k move between messages, n goes to an unread topic, c and Esc', async () => {
    await b.click('#narrow-title');
    await b.keyboard.press('k');
    assert.ok(await b.evaluate(() => document.activeElement.classList.contains('msg')));
    const first = await b.evaluate(() => document.activeElement.dataset.id);
    await b.keyboard.press('k');
    await b.keyboard.press('j');
    assert.equal(await b.evaluate(() => document.activeElement.dataset.id), first);
    await b.keyboard.press('c');
    assert.ok(['compose-text', 'compose-topic'].includes(await b.evaluate(() => document.activeElement.id)));
    await b.keyboard.press('Escape');
    assert.ok(!['compose-text', 'compose-topic'].includes(await b.evaluate(() => document.activeElement.id)));
  });

  await t.test('a run of messages reads like a chat: one recipient bar, the sender and the day once', async () => {
    await narrowTo(a, 'general');
    await narrowTo(b, 'general');
    await a.locator(named('Topic')).fill('rowing schedule');
    for (const text of ['First of three', 'Second of three', 'Third of three']) assert.equal(await send(a, text), '');
    await waitText(b, '[role=feed] article', 'Third of three');
    const shown = await b.$$eval('[role=feed] article', (ns) => ns.slice(-3).map((n) => ({
      bar: n.querySelector('.rbar').checkVisibility(), sender: n.querySelector('.sender').checkVisibility(),
      avatar: n.querySelector('.avatar').checkVisibility(), day: n.querySelector('.date-line').checkVisibility() })));
    assert.deepEqual(shown, [{ bar: true, sender: true, avatar: true, day: false }, { bar: false, sender: false, avatar: false, day: false },
      { bar: false, sender: false, avatar: false, day: false }]);
    // The bar names the conversation, each part a link, and the day.
    await b.waitForSelector(named('rowing schedule', 'link'));
    assert.ok(await b.$eval('[role=feed] article:last-of-type', (n) => n.previousElementSibling.previousElementSibling.querySelector('.rbar').textContent.includes('Today')));
    await b.locator(named('rowing schedule', 'link')).click();
    await titled(b, '#general › rowing schedule');
  });

  await t.test('a run of messages over two days shows each day once, in Zulip\'s words', async () => {
    // Yesterday's messages in #results were written before the server
    // started (web_browser_test.go); Alice adds one today.
    await a.locator(named('Join #results', 'button')).click();
    await a.locator(named('#results', 'button')).click();
    await titled(a, '#results');
    await a.locator(named('Topic')).fill('autumn head');
    assert.equal(await send(a, 'Training again tomorrow'), '');
    const days = () => a.$$eval('[role=feed] article', (ns) => ns.map((n) => [
      [...n.querySelectorAll('.rbar time, .date-line time')].filter((x) => x.checkVisibility()).map((x) => x.textContent).join(', '),
      n.querySelector('.content').textContent]));
    const want = [['Yesterday', 'The autumn head is over: we came second'], ['', 'Photos to follow'], ['Today', 'Training again tomorrow']];
    await waitText(a, '[role=feed] article', 'Training again tomorrow');
    assert.deepEqual(await days(), want, 'as it arrives');
    await a.reload({ waitUntil: 'load' });
    await titled(a, '#results');
    await waitText(a, '[role=feed] article', 'Training again tomorrow');
    assert.deepEqual(await days(), want, 'after a reload');
    await narrowTo(a, 'general');
    await a.locator(named('Topic')).fill('rowing schedule');
  });

  await t.test('rendered content: emoji, a table, inline code and an uploaded image shown inline', async () => {
    // Set whole: typed, each newline would be an Enter, which sends.
    await a.$eval('#compose-text', (n) => { n.value = ':tada: the `boat` is ready\n\n| Seat | Rower |\n|---|---|\n| 1 | Bob |'; });
    await a.focus('#compose-text');
    await a.keyboard.press('Enter');
    await a.waitForFunction(() => document.querySelector('#compose-text').value === '', { timeout });
    const emoji = '[role=feed] [role=img][aria-label="tada"]';
    await b.waitForSelector(emoji);
    assert.equal(await b.$eval(emoji, (n) => n.textContent), '🎉', 'the shortcode is the emoji');
    await b.waitForSelector('[role=feed] table');
    assert.ok(await b.$eval('::-p-aria([name="Rower"][role="columnheader"])', (n) => getComputedStyle(n).borderTopStyle !== 'none'), 'the table has borders');
    assert.notEqual(await b.$eval('[role=feed] article:last-of-type code', (n) => getComputedStyle(n).backgroundColor), 'rgba(0, 0, 0, 0)', 'inline code has a background');
    // A 2×2 PNG, uploaded and shown, sized, under its link.
    const png = join(out, 'boathouse.png');
    writeFileSync(png, Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAEElEQVR4nGOQqzgBRAwQCgAjrgV5XtGN4QAAAABJRU5ErkJggg==', 'base64'));
    await (await a.$('#compose-file')).uploadFile(png);
    await a.waitForFunction(() => /\]\(\/user_uploads\//.test(document.querySelector('#compose-text').value), { timeout });
    assert.equal(await send(a, await valueOf(a, 'Message')), '');
    await b.waitForSelector('[role=feed] .message_inline_image img[alt="boathouse.png"]');
    await b.waitForFunction(() => [...document.querySelectorAll('.message_inline_image img')].some((i) => i.complete && i.naturalWidth === 2), { timeout });
  });

  await t.test('an uploaded photo shows whole, as a thumbnail in a bounded box', async () => {
    // A 1200×900 photo: one colour a row, so that it packs small.
    const row = (y) => Buffer.concat([Buffer.from([0]), Buffer.alloc(1200 * 3, y < 450 ? 0x4a : 0xc8)]);
    const chunk = (type, data) => {
      const len = Buffer.alloc(4);
      len.writeUInt32BE(data.length);
      const crc = Buffer.alloc(4);
      crc.writeUInt32BE(crc32(Buffer.concat([Buffer.from(type), data])));
      return Buffer.concat([len, Buffer.from(type), data, crc]);
    };
    const header = Buffer.alloc(13);
    header.writeUInt32BE(1200, 0);
    header.writeUInt32BE(900, 4);
    header.set([8, 2, 0, 0, 0], 8);
    const photo = join(out, 'course-map.png');
    writeFileSync(photo, Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), chunk('IHDR', header),
      chunk('IDAT', deflateSync(Buffer.concat(Array.from({ length: 900 }, (_, y) => row(y))))), chunk('IEND', Buffer.alloc(0))]));
    await (await a.$('#compose-file')).uploadFile(photo);
    await a.waitForFunction(() => /\]\(\/user_uploads\/.*course-map\.png\)/.test(document.querySelector('#compose-text').value), { timeout });
    assert.equal(await send(a, await valueOf(a, 'Message')), '');
    const img = await b.waitForSelector('[role=feed] img[alt="course-map.png"]');
    await img.scrollIntoView();
    await b.waitForFunction((i) => i.complete && i.naturalWidth === 1200, { timeout }, img);
    const shown = await b.evaluate((i) => {
      const r = i.getBoundingClientRect();
      const top = document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2);
      return { width: r.width, height: r.height, seen: i.checkVisibility({ opacityProperty: true, visibilityProperty: true }) && (top === i || i.contains(top)) };
    }, img);
    assert.ok(shown.seen, 'the photo is seen, not covered');
    assert.ok(shown.width >= 100 && shown.width <= 320 && shown.height >= 75 && shown.height <= 240, `shown ${shown.width}×${shown.height}, a thumbnail`);
    assert.ok(Math.abs(shown.width / shown.height - 4 / 3) < 0.05, `shown ${shown.width}×${shown.height}, not its 4:3`);
    // The channel opened again, the photo slow to come: the newest
    // message is still in view once it has come. Its box is kept for it
    // from the start; one that grew as it came pushed the newest out of
    // sight under a reader at the bottom, and out of what is marked read.
    await go(b, byText('Inbox'), 'Inbox');
    const slow = (r) => (r.url().includes('/user_uploads/') ? setTimeout(() => r.continue().catch(() => {}), 500) : r.continue().catch(() => {}));
    b.on('request', slow);
    await b.setCacheEnabled(false);
    await b.setRequestInterception(true);
    try {
      await narrowTo(b, 'general');
      await b.waitForFunction(() => [...document.querySelectorAll('[role=feed] img[alt="course-map.png"]')].some((i) => i.complete && i.naturalWidth === 1200), { timeout });
      const newest = await b.evaluate(async () => {
        await new Promise((laidOut) => requestAnimationFrame(() => requestAnimationFrame(laidOut)));
        const list = document.querySelector('[role=feed]').getBoundingClientRect();
        const last = [...document.querySelectorAll('[role=feed] article')].at(-1).getBoundingClientRect();
        return { below: Math.round(last.bottom - list.bottom) };
      });
      assert.ok(newest.below <= 1, `the newest message's bottom is ${newest.below} px below the list's`);
    } finally {
      await b.setRequestInterception(false);
      await b.setCacheEnabled(true);
      b.off('request', slow);
    }
  });

  await t.test('the inbox lists the unread conversations with their counts', async () => {
    await b.goto(`${site}/#narrow/search/nothing-here`);
    await b.waitForSelector(named('#general', 'button'));
    await a.locator(named('Topic')).fill('regatta');
    assert.equal(await send(a, 'The regatta is on Saturday'), '');
    assert.equal(await send(a, 'Bring a hat'), '');
    const bobID = (await call(a, 'GET', '/users')).members.find((u) => u.full_name === 'Bob').user_id;
    await call(a, 'POST', '/messages', { type: 'direct', to: [bobID], content: 'Are you rowing on Saturday?' });
    await b.locator(byText('Inbox')).click();
    await titled(b, 'Inbox');
    await b.waitForSelector(named('regatta 2 unread', 'link'));
    await b.waitForSelector('::-p-aria([name="#general"][role="region"])');
    await inside(b, named('Direct messages', 'region'), named('Alice 1 unread', 'link'));
    await b.locator(named('regatta 2 unread', 'link')).click();
    await titled(b, '#general › regatta');
    await b.locator(byText('Inbox')).click();
    await b.waitForFunction(() => !document.querySelector('#inbox').textContent.includes('regatta'), { timeout });
  });

  // Issue 34 item 6: Zulip's Recent conversations (#recent), read as a
  // person reads its table: each row's cells by their text, a
  // participant's avatar by its name.
  await t.test('recent conversations: the latest first, live, opened by a click or Enter, kept over a reload', async () => {
    const recentRows = (page) => page.$$eval('::-p-aria([name="Recent conversations"][role="table"]) tbody tr', (trs) => trs.map((tr) =>
      [...tr.cells].map((c) => [c.innerText, ...[...c.querySelectorAll('img')].map((i) => i.alt)].join(' ').replace(/\s+/g, ' ').trim())));
    const waitRows = async (want) => {
      let got;
      for (const end = Date.now() + timeout; Date.now() < end; await pause(100)) {
        got = (await recentRows(b)).slice(0, want.length);
        if (JSON.stringify(got) === JSON.stringify(want)) return;
      }
      assert.deepEqual(got, want, 'Recent conversations, the latest first');
    };
    await b.goto(`${site}/#narrow/search/nothing-here`);
    await b.waitForSelector(named('Recent conversations', 'button'));
    await call(b, 'POST', '/mark_all_as_read');
    await b.waitForSelector(named('#general', 'button'));
    const bobID = (await call(a, 'GET', '/users')).members.find((u) => u.full_name === 'Bob').user_id;
    await call(a, 'POST', '/messages', { type: 'stream', to: 'general', topic: 'boathouse keys', content: 'Who has the boathouse keys?' });
    await call(a, 'POST', '/messages', { type: 'direct', to: [bobID], content: 'The keys are with me' });
    await b.locator(byText('Recent conversations')).click();
    await titled(b, 'Recent conversations');
    assert.equal(await b.evaluate(() => location.hash), '#recent');
    const dm = ['Direct messages', 'Alice 1 unread', 'Alice Bob', 'Just now'];
    await waitRows([dm, ['general', 'boathouse keys 1 unread', 'Alice', 'Just now']]);
    // A new message moves its conversation to the top, counted.
    await call(a, 'POST', '/messages', { type: 'stream', to: 'general', topic: 'boathouse keys', content: 'Try the office' });
    await waitRows([['general', 'boathouse keys 2 unread', 'Alice', 'Just now'], dm]);
    // j walks the rows; Enter opens the direct conversation, read there.
    await b.keyboard.press('j');
    await b.keyboard.press('j');
    assert.equal(await b.evaluate(() => document.activeElement.textContent), 'Alice');
    await b.keyboard.press('Enter');
    await titled(b, 'Alice');
    assert.match(await b.evaluate(() => location.hash), /^#narrow\/dm\/\d+-Alice$/);
    await waitText(b, '[role=feed] article', 'The keys are with me');
    await b.waitForSelector(named('Alice', 'button')); // read: the sidebar's count is gone
    await b.goBack();
    await titled(b, 'Recent conversations');
    await waitRows([['general', 'boathouse keys 2 unread', 'Alice', 'Just now'], ['Direct messages', 'Alice', 'Alice Bob', 'Just now']]);
    // A click anywhere on a row opens its conversation.
    await again(async () => (await inside(b, named('Recent conversations', 'table'), named('Alice', 'image'))).click());
    await titled(b, '#general › boathouse keys');
    assert.match(await b.evaluate(() => location.hash), /^#narrow\/channel\/\d+-general\/topic\/boathouse\.20keys$/);
    await waitText(b, '[role=feed] article', 'Try the office');
    await b.waitForSelector(named('boathouse keys', 'button'));
    await b.goBack();
    await waitRows([['general', 'boathouse keys', 'Alice', 'Just now']]);
    // What was read reaches the server a moment later; then a reload.
    await b.waitForFunction(async () => (await (await import('/web/api.js')).api('GET', '/messages', { narrow: [{ operator: 'is', operand: 'unread' }], anchor: 'newest', num_before: 10, num_after: 0 })).messages.length === 0, { timeout, polling: 200 });
    await b.reload({ waitUntil: 'load' });
    await titled(b, 'Recent conversations');
    await waitRows([['general', 'boathouse keys', 'Alice', 'Just now'], ['Direct messages', 'Alice', 'Alice Bob', 'Just now']]);
    for (const theme of ['light', 'dark']) assert.deepEqual(await axeViolations(b, theme), [], `#recent, ${theme} theme`);
    await b.emulateMediaFeatures([]);
    await b.setViewport({ width: 360, height: 740, isMobile: true, hasTouch: true });
    await titled(b, 'Recent conversations');
    await waitRows([['general', 'boathouse keys', 'Alice', 'Just now']]);
    const wide = await b.evaluate(() => [...document.querySelectorAll('body *')].filter((n) => n.offsetParent && n.getBoundingClientRect().right > innerWidth + 1).slice(0, 4).map((n) => n.id || n.className || n.tagName));
    assert.deepEqual({ page: await b.evaluate(() => document.documentElement.scrollWidth), wide }, { page: 360, wide: [] }, 'Recent conversations at 360 px');
    await b.screenshot({ path: join(out, 'phone-bob-recent.png') });
    await b.setViewport({ width: 1280, height: 800 });
    await titled(b, 'Recent conversations');
  });

  // Issue 34: what was read is sent a moment later; a reload before
  // then sends it as the page goes, so that nothing comes back unread.
  await t.test('what was read just before a reload stays read', async () => {
    await b.goto(`${site}/#narrow/search/nothing-here`);
    await b.waitForSelector(named('#general', 'button'));
    await call(b, 'POST', '/mark_all_as_read');
    for (const content of ['The launch is at nine', 'Oars are in the shed']) await call(a, 'POST', '/messages', { type: 'stream', to: 'general', topic: 'launch', content });
    await b.locator(named('#general 2 unread', 'button')).click();
    await waitText(b, '[role=feed] article', 'Oars are in the shed');
    await b.waitForSelector(named('#general', 'button')); // read on the page, the marks still waiting
    // Reloaded at once into Inbox, where nothing is marked read again.
    await b.evaluate(() => history.replaceState(null, '', '#inbox'));
    await b.reload({ waitUntil: 'load' });
    await titled(b, 'Inbox');
    await b.waitForSelector(byText('There are no unread messages in your inbox.'));
    const unread = await call(b, 'GET', '/messages', { narrow: [{ operator: 'is', operand: 'unread' }], anchor: 'newest', num_before: 10, num_after: 0 });
    assert.deepEqual(unread.messages.map((m) => m.content), [], 'unread on the server');
  });

  await t.test('Esc in Inbox and Recent conversations leaves the keyboard on a row shown', async () => {
    const bobID = (await call(a, 'GET', '/users')).members.find((u) => u.full_name === 'Bob').user_id;
    await call(a, 'POST', '/messages', { type: 'direct', to: [bobID], content: 'Is the launch ready?' });
    // What has the focus, by its name, and whether it is shown.
    const focusOn = async (selector) => assert.deepEqual(await b.$eval(selector, (row) => {
      const f = document.activeElement;
      return { focus: f === row ? 'the row' : f.getAttribute('aria-label') || f.id || f.tagName, shown: f.checkVisibility() };
    }), { focus: 'the row', shown: true }, 'the focus after Esc');
    await b.waitForSelector(named('Alice 1 unread', 'link'));
    await b.keyboard.press('c');
    await b.keyboard.press('Escape');
    await focusOn(named('Alice 1 unread', 'link'));
    await b.locator(byText('Recent conversations')).click();
    await titled(b, 'Recent conversations');
    const latest = named('Alice', 'link'); // the direct conversation's row
    await b.waitForSelector(latest);
    await b.keyboard.press('j'); // onto the first row, the latest
    await b.keyboard.press('c');
    await b.keyboard.press('Escape');
    await focusOn(latest);
  });

  await t.test('j and k walk the inbox\'s rows; Esc closes settings, back to the view they were opened from', async () => {
    await call(a, 'POST', '/messages', { type: 'stream', to: 'general', topic: 'oars', content: 'Who has the spare oars?' });
    await go(b, byText('Inbox'), 'Inbox');
    await b.waitForSelector(named('oars 1 unread', 'link'));
    await b.waitForSelector(named('Alice 1 unread', 'link'));
    // The focused row, by the conversation it links to.
    const focused = () => b.evaluate(() => (document.activeElement.closest('#inbox') ? document.activeElement.getAttribute('href') : document.activeElement.tagName));
    const walked = [];
    for (const key of ['j', 'j', 'k']) {
      await b.keyboard.press(key);
      walked.push(await focused());
    }
    assert.ok(walked[0] !== walked[1] && walked[2] === walked[0] && walked.every((href) => href?.startsWith('#narrow/')), `j, j, k in the inbox: ${walked}`);
    await go(b, named('oars 1 unread', 'link'), '#general › oars');
    await openSettings(b, 'Profile');
    await b.locator(named('Full name')).click();
    await b.keyboard.press('Escape'); // leaves the field, not the page
    assert.equal(await b.evaluate(() => document.activeElement.matches('input, textarea, select')), false, 'Esc leaves the field');
    await b.waitForSelector(named('Profile', 'heading'));
    await b.keyboard.press('Escape');
    await titled(b, '#general › oars');
    await b.waitForSelector(named('Message'));
  });

  await t.test('the emoji picker offers the whole table, with a search', async () => {
    await narrowTo(b, 'general');
    await b.locator(named('regatta', 'button')).click();
    await titled(b, '#general › regatta');
    await b.waitForSelector(named('Add a reaction', 'button'));
    const react = await b.$$(named('Add a reaction', 'button'));
    await react.at(-1).click();
    await b.waitForSelector(named('Search emoji'));
    assert.ok(await b.$$eval('::-p-aria([name="All emoji"][role="group"]) button', (ns) => ns.length) > 1000, 'the whole table is offered');
    await b.locator(named('Search emoji')).fill('rowboat');
    await b.waitForFunction(() => document.querySelectorAll('.emoji-grid button').length === 1, { timeout });
    await b.keyboard.press('Enter');
    await b.waitForSelector(named('🚣 1 rowboat: Bob', 'button'));
  });

  await t.test('personal settings: status, channels, topics, muted people, alert words, drafts and scheduled messages', async () => {
    await openSettings(b, 'Profile');
    await b.locator(named('Status text')).fill('On the water');
    await b.locator(named('Status emoji')).fill('no_such_emoji');
    await b.locator(named('Save status', 'button')).click();
    await b.waitForSelector(byText("Emoji 'no_such_emoji' does not exist"));
    await b.locator(named('Status emoji')).fill('rowboat');
    await b.locator(named('Save status', 'button')).click();
    await b.waitForSelector(byText('Status saved.'));
    // An avatar is uploaded, shown, and removed again.
    await (await b.$('::-p-aria([name="Upload an avatar"][role="form"]) input[type=file]')).uploadFile(join(out, 'boathouse.png'));
    await b.locator(named('Upload avatar', 'button')).click();
    await b.waitForSelector(byText('Avatar uploaded.'));
    await b.waitForFunction(() => { const i = document.querySelector('img.avatar.big'); return i.complete && i.naturalWidth > 0 && !i.src.includes('/default/'); }, { timeout });
    const uploaded = await b.evaluate(() => document.querySelector('img.avatar.big').src);
    await b.locator(named('Delete avatar', 'button')).click();
    // Gone: the page clears it, and the realm_user event that follows may
    // redraw the page with the default avatar's URL.
    await b.waitForFunction((was) => { const src = document.querySelector('img.avatar.big').getAttribute('src'); return !src || (src !== was && src.includes('/default/')); }, { timeout }, uploaded);
    const me = await b.evaluate(async () => (await (await import('/web/api.js')).api('GET', '/users/me')).user_id);
    assert.equal((await call(b, 'GET', `/users/${me}/status`)).status.status_text, 'On the water');

    await b.locator(named('Join #random', 'button')).click();
    await b.waitForSelector('#channels li[data-channel="random"]');
    await openSettings(b, 'Subscribed channels');
    await b.waitForSelector('::-p-aria([name="#general"][role="listitem"])');
    await (await inside(b, named('#general', 'listitem'), named('Pin to top'))).evaluate((n) => n.click());
    // The subscription's event comes back and the sidebar pins it.
    await b.waitForSelector('#channels li.pinned[data-channel="general"]');
    const pinned = (await call(b, 'GET', '/users/me/subscriptions')).subscriptions.find((x) => x.name === 'general').pin_to_top;
    assert.equal(pinned, true, 'pinned on the server');
    await b.locator(named('Leave #random', 'button')).click();
    await b.waitForSelector('#joinable li[data-channel="random"]');

    await b.locator(named('regatta', 'button')).click().catch(async () => {
      await b.locator(named('#general', 'button')).click();
      await b.locator(named('regatta', 'button')).click();
    });
    await titled(b, '#general › regatta');
    await b.select(named('Topic notifications'), '3');
    await openSettings(b, 'Topics');
    await b.waitForSelector('::-p-aria([name="Followed"][role="cell"])');
    await b.locator(named('Topic')).fill('late news');
    await b.select(named('Visibility'), '1');
    await b.locator(named('Save topic', 'button')).click();
    await b.waitForSelector('::-p-aria([name="Muted"][role="cell"])');
    await b.locator(named('Reset late news', 'button')).click();
    await b.waitForFunction(() => !document.querySelector('.settings-page').textContent.includes('late news'), { timeout });

    await openSettings(b, 'Muted users');
    await b.select(named('Person to mute'), await b.$eval(named('Person to mute'), (s) => [...s.options].find((o) => o.textContent === 'Carol').value));
    await b.locator(named('Mute', 'button')).click();
    await b.waitForSelector(named('Unmute Carol', 'button'));
    // A muted sender's messages are hidden until revealed, as in Zulip.
    await b.select(named('Person to mute'), await b.$eval(named('Person to mute'), (s) => [...s.options].find((o) => o.textContent === 'Alice').value));
    await b.locator(named('Mute', 'button')).click();
    await b.waitForSelector(named('Unmute Alice', 'button'));
    await narrowTo(b, 'general');
    await b.waitForSelector(byText('This message was hidden because you have muted the sender.'));
    const hidden = await b.$$eval('[role=feed] .hidden-message', (ns) => ns.length);
    await (await b.$$(named('Click here to reveal.', 'button'))).at(-1).click();
    await b.waitForFunction((n) => document.querySelectorAll('[role=feed] .hidden-message').length === n - 1, { timeout }, hidden);
    await openSettings(b, 'Muted users');
    await b.locator(named('Unmute Alice', 'button')).click();
    await b.waitForFunction(() => !document.querySelector('[role=feed] .hidden-message'), { timeout });

    await openSettings(b, 'Alert words');
    await b.locator(named('Alert word')).fill('regatta');
    await b.locator(named('Add alert word', 'button')).click();
    await b.waitForSelector(named('Delete regatta', 'button'));

    // Half a message, left for another conversation, is kept as a draft
    // and restored from the Drafts page.
    await narrowTo(b, 'general');
    await b.locator(named('regatta', 'button')).click();
    await titled(b, '#general › regatta');
    await b.locator(named('Message')).fill('Half a message about the regatta');
    const aliceID = (await call(b, 'GET', '/users')).members.find((u) => u.full_name === 'Alice').user_id;
    await b.evaluate((id) => { location.hash = `#narrow/dm/${id}-Alice`; }, aliceID);
    await titled(b, 'Alice');
    assert.equal(await valueOf(b, 'Message'), '', 'the box is cleared for the new conversation');
    await openSettings(b, 'Drafts');
    await b.waitForSelector(byText('Half a message about the regatta'));
    await b.locator(named('Restore draft', 'button')).click();
    await titled(b, '#general › regatta');
    await b.waitForFunction((s) => document.querySelector(s).value === 'Half a message about the regatta', { timeout }, 'textarea[aria-label="Message"]');
    await b.locator(named('Message')).fill('');
    const general = (await call(b, 'GET', '/users/me/subscriptions')).subscriptions.find((x) => x.name === 'general').stream_id;
    await call(b, 'POST', '/drafts', { drafts: [{ type: 'stream', to: [general], topic: 'regatta', content: 'A thought for later', timestamp: Math.floor(Date.now() / 1000) }] });
    await openSettings(b, 'Drafts');
    await b.waitForSelector(byText('A thought for later'));
    await b.locator(named('Delete draft', 'button')).click();
    await b.waitForSelector(byText('No drafts.'));

    await openSettings(b, 'Scheduled messages');
    await b.locator(named('Topic')).fill('boathouse');
    await b.locator(named('Message')).fill('See you at the boathouse');
    await b.locator(named('Schedule message', 'button')).click();
    await b.waitForSelector(named('Cancel scheduled message', 'button'));
    await b.waitForSelector(byText('See you at the boathouse'));
    await b.locator(named('Cancel scheduled message', 'button')).click();
    await b.waitForSelector(byText('No scheduled messages.'));
    await narrowTo(b, 'general');
  });

  await t.test('a channel\'s own settings: color, mute, pin and notifications, read back, and a refused color shows Zulip\'s error', async () => {
    await b.locator(named('Join #random', 'button')).click();
    await b.waitForSelector('#channels li[data-channel="random"]');
    await openSettings(b, 'Subscribed channels');
    const row = '::-p-aria([name="#random"][role="listitem"])';
    const option = (label) => `${row} ::-p-aria([name=${JSON.stringify(label)}][role="checkbox"])`;
    // Each change goes through the server and comes back as an event
    // that draws the page again: wait for the server's state each time.
    const saved = (property, value) => b.waitForFunction(async (p, v) => (await (await import('/web/api.js')).api('GET', '/users/me/subscriptions'))
      .subscriptions.find((x) => x.name === 'random')[p] === v, { timeout }, property, value);
    // Found by locators, which look again when an event has drawn the
    // page anew between finding a control and using it.
    await b.locator(`${row} ::-p-aria([name="Color of #random"])`).map((n) => {
      n.value = '#3a7f5c';
      return n.dispatchEvent(new Event('change', { bubbles: true }));
    }).wait();
    await saved('color', '#3a7f5c');
    await b.waitForFunction(() => document.querySelector('input[aria-label="Color code of #random"]')?.value === '#3a7f5c', { timeout });
    const options = [['Mute channel', 'is_muted'], ['Pin to top', 'pin_to_top'], ['Desktop notifications', 'desktop_notifications'],
      ['Audible notifications', 'audible_notifications'], ['Mobile notifications', 'push_notifications'], ['Email notifications', 'email_notifications']];
    for (const [label, property] of options) {
      await b.locator(option(label)).click();
      await saved(property, true);
    }
    const sub = (await call(b, 'GET', '/users/me/subscriptions')).subscriptions.find((x) => x.name === 'random');
    assert.deepEqual(options.map(([, p]) => [p, sub[p]]), options.map(([, p]) => [p, true]), 'every option saved on the server');
    // The page has heard the last change: what it shows now is drawn from it.
    await b.waitForFunction(async () => [...(await import('/web/state.js')).state.channels.values()].find((c) => c.name === 'random')?.email_notifications === true, { timeout });
    assert.deepEqual(await Promise.all(options.map(([label]) => b.locator(option(label)).map((n) => n.checked).wait())), options.map(() => true), 'and shown checked');
    await b.waitForSelector('#channels li.muted-channel.pinned[data-channel="random"]');
    // A color typed by name, not as a hex code, is refused.
    await b.locator(`${row} ::-p-aria([name="Color code of #random"])`).fill('teal');
    await b.keyboard.press('Tab');
    await b.waitForSelector(`${row} ${byText('Invalid subscription_data[0]: Value error, color is not a valid hex color code')}`);
    assert.equal((await call(b, 'GET', '/users/me/subscriptions')).subscriptions.find((x) => x.name === 'random').color, '#3a7f5c', 'the color is kept');
    await b.locator(named('Leave #random', 'button')).click();
    await b.waitForSelector('#joinable li[data-channel="random"]');
    await narrowTo(b, 'general');
  });

  await t.test('a channel\'s notifications left unset follow one\'s own settings, live, until set', async () => {
    const general = async () => (await call(b, 'GET', '/users/me/subscriptions')).subscriptions.find((x) => x.name === 'general');
    assert.equal((await general()).desktop_notifications, null, 'never set for #general');
    await openSettings(b, 'Subscribed channels');
    const option = (label) => inside(b, named('#general', 'listitem'), named(label, 'checkbox'));
    const checked = async (label) => (await option(label)).evaluate((n) => n.checked);
    assert.equal(await checked('Desktop notifications'), false, 'off, as Bob\'s channel setting is');
    // Turned on for channels from another page: the unset box follows.
    await call(b, 'PATCH', '/settings', { enable_stream_desktop_notifications: true });
    for (const end = Date.now() + timeout; !(await checked('Desktop notifications')); await pause(100)) assert.ok(Date.now() < end, 'the unset box follows one\'s own setting');
    assert.equal(await checked('Notifications for @all/@everyone mentions'), true, 'on, as Zulip\'s default is');
    // Unticked here, it is set for #general alone.
    await again(async () => (await option('Desktop notifications')).click());
    await b.waitForFunction(async () => (await (await import('/web/api.js')).api('GET', '/users/me/subscriptions'))
      .subscriptions.find((x) => x.name === 'general').desktop_notifications === false, { timeout });
    await b.waitForFunction(async () => [...(await import('/web/state.js')).state.channels.values()].find((c) => c.name === 'general')?.desktop_notifications === false, { timeout });
    assert.equal(await checked('Desktop notifications'), false, 'set, it no longer follows');
    await call(b, 'PATCH', '/settings', { enable_stream_desktop_notifications: false });
    await narrowTo(b, 'general');
  });

  await t.test('alert words: a refusal shows Zulip\'s error, and one is deleted', async () => {
    await openSettings(b, 'Alert words');
    await b.waitForSelector(named('Delete regatta', 'button'));
    await b.locator(named('Alert word')).fill('the regatta on the lake, the one with the old boathouse, the long course, and the picnic after the race ends');
    await b.locator(named('Add alert word', 'button')).click();
    await b.waitForSelector(byText('alert_words[0] is too long (limit: 100 characters)'));
    await b.locator(named('Delete regatta', 'button')).click();
    await b.waitForSelector(byText('You have no alert words.'));
    assert.deepEqual((await call(b, 'GET', '/users/me/alert_words')).alert_words, [], 'deleted on the server');
  });

  await t.test('drafts and scheduled messages: refusals show Zulip\'s error', async () => {
    // A draft deleted on another device, then here before the page has
    // heard of it: its next poll is held back.
    const held = [];
    const hold = (r) => (r.url().includes('/json/events?') && r.method() === 'GET' ? held.push(r) : r.continue());
    b.on('request', hold);
    await b.setRequestInterception(true);
    const general = (await call(b, 'GET', '/users/me/subscriptions')).subscriptions.find((x) => x.name === 'general').stream_id;
    // The new draft's event answers the waiting poll; the next one is held.
    const { ids: [draft] } = await call(b, 'POST', '/drafts', { drafts: [{ type: 'stream', to: [general], topic: 'regatta', content: 'Notes from the far shore', timestamp: Math.floor(Date.now() / 1000) }] });
    try {
      await openSettings(b, 'Drafts');
      await b.waitForSelector(byText('Notes from the far shore'));
      for (let i = 0; i < 50 && !held.length; i++) await pause(100);
      assert.equal(held.length, 1, 'the next poll is held');
      await call(b, 'DELETE', `/drafts/${draft}`);
      await b.locator(named('Delete draft', 'button')).click();
      await b.waitForSelector(byText('Draft does not exist'));
    } finally {
      // Let the page through; a request caught as interception ends goes
      // through without it.
      const pass = (r) => r.continue().catch(() => {});
      b.off('request', hold);
      b.on('request', pass);
      for (const r of held) await r.continue().catch(() => {});
      await b.setRequestInterception(false);
      b.off('request', pass);
      await call(b, 'DELETE', `/drafts/${draft}`).catch(() => {});
    }
    await b.waitForSelector(byText('No drafts.'));
    // A time already past.
    await openSettings(b, 'Scheduled messages');
    await b.locator(named('Topic')).fill('boathouse');
    await b.locator(named('Message')).fill('Yesterday at the boathouse');
    await b.$eval(named('Send at'), (n) => { n.value = '2020-05-01T09:00'; });
    await b.locator(named('Schedule message', 'button')).click();
    await b.waitForSelector(byText('Scheduled delivery time must be in the future.'));
    assert.deepEqual((await call(b, 'GET', '/scheduled_messages')).scheduled_messages, [], 'nothing scheduled');
    await narrowTo(b, 'general');
  });

  await t.test('drafts: one added, edited or deleted on another device shows at once', async () => {
    const general = (await call(b, 'GET', '/users/me/subscriptions')).subscriptions.find((x) => x.name === 'general').stream_id;
    const draft = (content) => ({ type: 'stream', to: [general], topic: 'regatta', content, timestamp: Math.floor(Date.now() / 1000) });
    await openSettings(b, 'Drafts');
    await b.waitForSelector(byText('No drafts.'));
    const { ids: [id] } = await call(b, 'POST', '/drafts', { drafts: [draft('Oars to the boathouse')] });
    await b.waitForSelector(byText('Oars to the boathouse'));
    await call(b, 'PATCH', `/drafts/${id}`, { draft: draft('Oars and sculls to the boathouse') });
    await b.waitForSelector(byText('Oars and sculls to the boathouse'));
    await call(b, 'DELETE', `/drafts/${id}`);
    await b.waitForSelector(byText('No drafts.'));
    await narrowTo(b, 'general');
  });

  await t.test('own name and password: refusals show Zulip\'s error, a new password logs the page in again', async () => {
    const c = await open(browser, { email: 'carol@example.com', password: 'carol-password-1' });
    await openSettings(c, 'Profile');
    await c.locator(named('Full name')).fill('Carol @ home');
    await c.locator(named('Save name', 'button')).click();
    await c.waitForSelector(byText('Invalid characters in name!'));
    await c.locator(named('Full name')).fill('Carol Jones');
    await c.locator(named('Save name', 'button')).click();
    await c.waitForSelector(byText('Name saved.'));
    await a.waitForFunction(async () => (await (await import('/web/api.js')).api('GET', '/users')).members.some((u) => u.full_name === 'Carol Jones'), { timeout });
    await c.locator(named('Old password')).fill('not-her-password');
    await c.locator(named('New password')).fill('carol-password-2');
    await c.locator(named('Change password', 'button')).click();
    await c.waitForSelector(byText('Wrong password!'));
    await c.locator(named('Old password')).fill('carol-password-1');
    await c.locator(named('New password')).fill('short');
    await c.locator(named('Change password', 'button')).click();
    await c.waitForSelector(byText('New password is too weak!'));
    await c.locator(named('Old password')).fill('carol-password-1');
    await c.locator(named('New password')).fill('carol-password-2');
    await c.locator(named('Change password', 'button')).click();
    // The new password ended this session too: the page asks for it.
    await again(() => c.waitForSelector('#login-form:not([hidden])'));
    await again(() => c.waitForSelector(byText('Your password is changed. Log in again with the new one.')));
    assert.equal(await c.$eval('#login-email', (n) => n.value), 'carol@example.com');
    await c.locator('#login-password').fill('carol-password-1');
    await c.click('#login-form button[type=submit]');
    await c.waitForSelector(byText('Your username or password is incorrect'));
    await c.locator('#login-password').fill('carol-password-2');
    await c.click('#login-form button[type=submit]');
    await c.waitForSelector('#app-view:not([hidden]) #channels li');
    await c.browserContext().close();
  });

  await t.test('organization settings: a permission is changed, and a refusal shows Zulip\'s error', async () => {
    await openSettings(a, 'Permissions');
    const setting = named('Who can create public channels');
    const idOf = (label) => a.$eval(setting, (s, l) => [...s.options].find((o) => o.textContent === l).value, label);
    await a.select(setting, await idOf('Everyone on the internet'));
    await a.locator(named('Save changes', 'button')).click();
    await a.waitForSelector(byText("'can_create_public_channel_group' setting cannot be set to 'role:internet' group."));
    await a.select(setting, await idOf('Administrators'));
    await a.locator(named('Save changes', 'button')).click();
    await a.waitForSelector(byText('Saved.'));
    const realm = await a.evaluate(async () => (await (await import('/web/api.js')).api('POST', '/register', { fetch_event_types: ['realm'] })));
    assert.equal(String(realm.realm_can_create_public_channel_group), await idOf('Administrators'));
    await a.select(setting, await idOf('Members'));
    await a.locator(named('Save changes', 'button')).click();
    await a.waitForSelector(byText('Saved.'));
  });

  await t.test('organization people: a role, a refusal with Zulip\'s error, deactivate and reactivate', async () => {
    await openSettings(a, 'Users');
    const role = named('Role of Carol Jones');
    await a.waitForSelector(role);
    await a.select(role, '100');
    await a.waitForSelector(byText('Must be an organization owner'));
    await a.select(role, '300');
    await a.waitForFunction(async () => (await (await import('/web/api.js')).api('GET', '/users')).members.find((u) => u.full_name === 'Carol Jones').role === 300, { timeout });
    await a.locator(named('Deactivate Carol Jones', 'button')).click();
    await a.waitForSelector('::-p-aria([name="Carol Jones (deactivated)"][role="cell"])');
    await a.locator(named('Reactivate Carol Jones', 'button')).click();
    await a.waitForSelector(named('Deactivate Carol Jones', 'button'));
    await a.waitForSelector('::-p-aria([name="Carol Jones"][role="cell"])');
  });

  await t.test('organization channels: rename, describe, a permission with a refusal, archive', async () => {
    await openSettings(a, 'Channels');
    const settings = (c) => `::-p-aria([name="Settings of #${c}"][role="form"])`;
    const post = (c) => `${settings(c)} ::-p-aria([name="Who can post to this channel"])`;
    const idOf = (c, label) => a.$eval(post(c), (s, l) => [...s.options].find((o) => o.textContent === l).value, label);
    await a.waitForSelector(settings('random'));
    await a.select(post('random'), await idOf('random', 'Everyone on the internet'));
    await a.click(`${settings('random')} ::-p-aria([name="Save channel"][role="button"])`);
    await a.waitForSelector(byText("'can_send_message_group' setting cannot be set to 'role:internet' group."));
    await a.select(post('random'), await idOf('random', 'Administrators'));
    await a.locator(`${settings('random')} ::-p-aria([name="Channel name"])`).fill('open water');
    await a.locator(`${settings('random')} ::-p-aria([name="Channel description"])`).fill('Sculling on the lake');
    await a.click(`${settings('random')} ::-p-aria([name="Save channel"][role="button"])`);
    await a.waitForSelector(settings('open water'));
    // The sidebar follows the rename, and the archiving below.
    await a.waitForSelector('#channels li[data-channel="open water"]');
    const channel = (await call(a, 'GET', '/streams')).streams.find((c) => c.name === 'open water');
    assert.equal(channel.description, 'Sculling on the lake');
    assert.equal(String(channel.can_send_message_group), await idOf('open water', 'Administrators'));
    await a.locator(named('Archive #open water', 'button')).click();
    await a.waitForFunction(() => !document.querySelector('.settings-page').textContent.includes('#open water'), { timeout });
    assert.ok(!(await call(a, 'GET', '/streams')).streams.some((c) => c.name === 'open water'), 'archived');
    await a.waitForFunction(() => !document.querySelector('#channels li[data-channel="open water"]'), { timeout });
  });

  await t.test('invitation links: create with a role and an expiry, copy, list and revoke', async () => {
    await openSettings(a, 'Invitations');
    await a.select(named('Users who join will be'), '300');
    await a.select(named('Link expires after'), '1440');
    await a.locator(named('Create link', 'button')).click();
    await a.waitForSelector(byText('Link created.'));
    await a.waitForFunction(() => document.querySelector('input[aria-label="Invitation link"]')?.value.includes('/join/'), { timeout });
    const link = await valueOf(a, 'Invitation link');
    await a.waitForSelector(named('Copy link', 'button'));
    await a.waitForSelector(`::-p-aria([name=${JSON.stringify(link)}][role="cell"])`);
    await a.waitForSelector('::-p-aria([name="Moderators"][role="cell"])');
    await a.locator(named('Revoke link', 'button')).click();
    await a.waitForSelector(byText('No invitations.'));
  });

  await t.test('invitation links: an administrator is not offered the owners\' role, and a refusal shows Zulip\'s error', async () => {
    // Alice administers the organisation but does not own it: as in
    // Zulip's invite modal, only an owner may invite owners.
    await openSettings(a, 'Invitations');
    assert.deepEqual(await a.$eval(named('Users who join will be'), (s) => [...s.options].map((o) => o.textContent)),
      ['Guests', 'Members', 'Moderators', 'Organization administrators'], 'the roles Alice may invite as');
    assert.equal(await a.$eval(named('Users who join will be'), (s) => s.selectedOptions[0].textContent), 'Members');
    await assert.rejects(call(a, 'POST', '/invites/multiuse', { invite_as: '100' }), /Must be an organization owner/, 'and asked for anyway, refused');
    // A link revoked on another page, then here.
    await a.locator(named('Create link', 'button')).click();
    await a.waitForSelector(named('Revoke link', 'button'));
    const [{ id }] = (await call(a, 'GET', '/invites')).invites;
    await call(a, 'DELETE', `/invites/multiuse/${id}`);
    await a.locator(named('Revoke link', 'button')).click();
    await a.waitForSelector(byText('Invitation has already been revoked'));
    assert.deepEqual((await call(a, 'GET', '/invites')).invites, [], 'no link left');
  });

  await t.test('custom emoji: a refused name shows Zulip\'s error, upload, list, deactivate', async () => {
    await openSettings(a, 'Custom emoji');
    await (await a.$('::-p-aria([name="Add a custom emoji"][role="form"]) input[type=file]')).uploadFile(join(out, 'boathouse.png'));
    await a.locator(named('Emoji name')).fill('Boathouse');
    await a.locator(named('Add emoji', 'button')).click();
    await a.waitForSelector(byText('Emoji names must contain only lowercase English letters, digits, spaces, dashes, and underscores.'));
    await a.locator(named('Emoji name')).fill('boathouse');
    await a.locator(named('Add emoji', 'button')).click();
    await a.waitForSelector('::-p-aria([name=":boathouse:"][role="cell"])');
    await a.waitForFunction(() => { const i = document.querySelector('img[alt=":boathouse:"]'); return i?.complete && i.naturalWidth > 0; }, { timeout });
    await a.locator(named('Deactivate :boathouse:', 'button')).click();
    await a.waitForSelector(byText('No custom emoji.'));
  });

  await t.test('linkifiers: a refusal shows Zulip\'s error, add, edit, remove', async () => {
    await openSettings(a, 'Linkifiers');
    const add = '::-p-aria([name="Add a linkifier"][role="form"])';
    await a.locator(`${add} ::-p-aria([name="Pattern"])`).fill('#(?P<id>[0-9]+)');
    await a.locator(`${add} ::-p-aria([name="URL template"])`).fill('https://tracker.example/{num}');
    await a.locator(named('Add linkifier', 'button')).click();
    await a.waitForSelector(byText("Group 'num' in URL template is not present in linkifier pattern."));
    await a.locator(`${add} ::-p-aria([name="URL template"])`).fill('https://tracker.example/{id}');
    await a.locator(named('Add linkifier', 'button')).click();
    const row = '::-p-aria([name="Linkifier #(?P<id>[0-9]+)"][role="form"])';
    await a.waitForSelector(row);
    await a.locator(`${row} ::-p-aria([name="URL template"])`).fill('https://tracker.example/issues/{id}');
    await a.locator(named('Save linkifier', 'button')).click();
    await a.waitForFunction(async () => (await (await import('/web/api.js')).api('GET', '/realm/linkifiers')).linkifiers[0]?.url_template === 'https://tracker.example/issues/{id}', { timeout });
    await a.locator(named('Remove #(?P<id>[0-9]+)', 'button')).click();
    await a.waitForSelector(byText('No linkifiers.'));
  });

  await t.test('no serious accessibility violation on the inbox and the settings pages, light and dark', async () => {
    for (const where of ['#inbox', '#settings/profile', '#settings/channels', '#organization/permissions', '#organization/users', '#organization/channels', '#organization/invites', '#organization/emoji-settings', '#organization/linkifier-settings', '#organization/user-groups-admin']) {
      await a.evaluate((h) => { location.hash = h; }, where);
      await a.waitForFunction((h) => (h === '#inbox' ? !document.querySelector('#inbox').hidden : document.querySelector(`.settings-tabs [aria-current=page][href="${h}"]`)), { timeout }, where);
      for (const theme of ['light', 'dark']) assert.deepEqual(await axeViolations(a, theme), [], `${where}, ${theme} theme`);
    }
    await a.emulateMediaFeatures([]);
    await narrowTo(a, 'general');
  });

  await t.test('no serious accessibility violation, light and dark', async () => {
    for (const theme of ['light', 'dark']) assert.deepEqual(await axeViolations(a, theme), [], `${theme} theme`);
    await a.emulateMediaFeatures([]);
  });

  await t.test('no serious accessibility violation with the message actions shown, in a topic, a direct conversation, at 360 px and on the login page', async () => {
    const check = async (page, where) => {
      for (const theme of ['light', 'dark']) assert.deepEqual(await axeViolations(page, theme), [], `${where}, ${theme} theme`);
      await page.emulateMediaFeatures([]);
    };
    // The actions (Edit among them) show while a message is pointed at
    // or holds the focus: axe measures only what is shown.
    const edit = () => a.$$(named('Edit', 'button')).then((ns) => ns.at(-1));
    const opacity = async () => a.evaluate((n) => getComputedStyle(n.closest('.actions')).opacity, await edit());
    await (await edit()).hover();
    assert.equal(await opacity(), '1', 'the actions show on hover');
    await check(a, 'a message pointed at');
    await (await edit()).focus();
    await a.mouse.move(0, 0);
    assert.equal(await opacity(), '1', 'the actions show on focus');
    await check(a, 'a message\'s Edit focused');
    await a.locator(named('greetings', 'button')).click();
    await titled(a, '#general › greetings');
    await check(a, 'a topic');
    await a.locator(named('Bob', 'button')).click();
    await titled(a, 'Bob');
    await check(a, 'a direct conversation');
    await a.setViewport({ width: 360, height: 740, isMobile: true, hasTouch: true });
    await a.waitForSelector('[role=feed] article'); // a touch screen reloads the page
    await check(a, 'a direct conversation at 360 px');
    await a.locator(named('Channels and people', 'button')).click();
    await check(a, 'the menu at 360 px');
    await a.locator(named('Channels and people', 'button')).click();
    await a.setViewport({ width: 1280, height: 800 });
    await a.waitForSelector('[role=feed] article');
    await narrowTo(a, 'general');
    const login = await (await browser.createBrowserContext()).newPage();
    await login.goto(site, { waitUntil: 'load' });
    await login.waitForSelector(named(`Log in to ${realm}`, 'heading'));
    await check(login, 'the login page');
    await login.setViewport({ width: 360, height: 740, isMobile: true, hasTouch: true });
    await login.waitForSelector(named(`Log in to ${realm}`, 'heading'));
    await check(login, 'the login page at 360 px');
    await login.browserContext().close();
  });

  await t.test('the messages are a feed of articles, each control reached by Tab with a visible focus', async () => {
    const feed = await a.$eval('[role=feed]', (n) => [...n.querySelectorAll('article')].map((x) => [x.getAttribute('aria-posinset'), x.getAttribute('aria-setsize')]));
    assert.ok(feed.length > 0, 'the feed holds articles');
    feed.forEach(([pos, size], i) => {
      assert.equal(pos, String(i + 1), 'aria-posinset counts from 1');
      assert.ok(size === '-1' || Number(size) === feed.length, `aria-setsize ${size}`);
    });
    await a.evaluate(() => document.activeElement?.blur());
    const unseen = [];
    for (let i = 0; i < 60; i++) {
      await a.keyboard.press('Tab');
      const focus = await a.evaluate(() => {
        const n = document.activeElement;
        if (!n || n === document.body) return null;
        // The ring is on the element or, for a hidden input, on its label.
        const shown = (x) => x && getComputedStyle(x).outlineStyle !== 'none' && parseFloat(getComputedStyle(x).outlineWidth) > 0;
        const r = n.getBoundingClientRect();
        const visible = r.width > 2 && r.height > 2;
        return { name: n.getAttribute('aria-label') || n.textContent.trim().slice(0, 30) || n.id, ok: (visible && shown(n)) || shown(n.closest('label')) };
      });
      if (focus && !focus.ok) unseen.push(focus.name);
    }
    assert.deepEqual([...new Set(unseen)], [], 'controls whose focus is not seen');
  });

  await t.test('by keyboard alone: a channel and a topic opened, a message sent, a reaction and an edit', async () => {
    await a.evaluate(() => document.activeElement?.blur());
    await tabTo(a, named('#general', 'button'));
    await a.keyboard.press('Enter');
    await titled(a, '#general');
    await tabTo(a, named('greetings', 'button'));
    await a.keyboard.press('Enter');
    await titled(a, '#general › greetings');
    await tabTo(a, named('Message'), true);
    await a.keyboard.type('Sent by keyboard alone');
    await a.keyboard.press('Enter');
    await waitText(b, '[role=feed] article', 'Sent by keyboard alone');
    // Back from the box, the first "Add a reaction" is the new message's.
    await tabTo(a, named('Add a reaction', 'button'), true);
    await a.keyboard.press('Enter');
    await a.waitForSelector(named('Search emoji'));
    await a.keyboard.type('octopus');
    await a.keyboard.press('Enter');
    await b.waitForSelector(named('🐙 1 octopus: Alice', 'button'));
    await tabTo(a, named('Edit', 'button'));
    await a.keyboard.press('Space');
    await a.waitForFunction((s) => document.querySelector(s).value === 'Sent by keyboard alone' && document.activeElement === document.querySelector(s), { timeout }, 'textarea[aria-label="Message"]');
    await a.keyboard.type(', and edited');
    await a.keyboard.press('Enter');
    await waitText(b, '[role=feed] article', 'Sent by keyboard alone, and edited');
    await narrowTo(a, 'general');
  });

  await t.test('at 360 px nothing overflows with long names, and search is there', async () => {
    const long = 'a-channel-named-at-length-for-phones-39';
    await openSettings(a, 'Channels');
    await a.locator(named('New channel')).fill(long);
    await a.locator(named('Create channel', 'button')).click();
    await a.waitForSelector(named(`#${long}`, 'button'));
    await openSettings(a, 'Users');
    await a.locator(named('Name', 'textbox')).fill('Bartholomew Maximilian Featherstonehaugh-Smythe');
    await a.locator(named('E-mail', 'textbox')).fill('bart@example.com');
    await a.locator(named('Password')).fill('bart-password-1');
    await a.locator(named('Add person', 'button')).click();
    await a.waitForSelector(`::-p-aria([name="Bartholomew Maximilian Featherstonehaugh-Smythe"][role="cell"])`);
    await a.locator(named(`#${long}`, 'button')).click();
    await a.locator(named('Topic')).fill('a topic that goes on and on about nothing in particular, 60');
    assert.equal(await send(a, 'Wide enough?'), '');
    await a.setViewport({ width: 360, height: 740, isMobile: true, hasTouch: true });
    // A touch screen reloads the page: measure it once it shows the
    // message again, back in its narrow (its URL), not half loaded.
    await a.waitForSelector(byText('Wide enough?'), { timeout });
    const overflow = () => a.evaluate(() => {
      const wide = [...document.querySelectorAll('body *')].filter((n) => n.offsetParent && n.getBoundingClientRect().right > innerWidth + 1);
      return { page: document.documentElement.scrollWidth, wide: wide.slice(0, 4).map((n) => n.id || n.className || n.tagName) };
    });
    for (const where of ['messages', 'menu']) {
      if (where === 'menu') await a.locator(named('Channels and people', 'button')).click();
      assert.deepEqual(await overflow(), { page: 360, wide: [] }, `the ${where} at 360 px`);
    }
    await a.locator(named('Channels and people', 'button')).click();
    const search = await a.$(named('Search messages'));
    assert.ok(search && (await search.boundingBox())?.width > 100, 'search is shown at phone width');
    await a.screenshot({ path: join(out, 'phone-alice-long-names.png') });
    await a.setViewport({ width: 1280, height: 800 });
  });

  await t.test('user groups: create with a member by keyboard, a refusal shows Zulip\'s error, rename, members, deactivate', async () => {
    await openSettings(a, 'User groups');
    await a.waitForSelector(byText('There are no user groups you can view in this organization.'));
    const create = named('Create user group', 'form');
    const group = (g) => `::-p-aria([name=${JSON.stringify(g)}][role="listitem"])`;
    const idOf = (label) => a.$eval(`${group('coaches')} select`, (s, l) => [...s.options].find((o) => o.textContent === l).value, label);
    // Keyboard only: the member's box by Space, the form sent by Enter.
    await a.locator(`${create} ::-p-aria([name="User group name"])`).fill('coaches');
    await a.locator(`${create} ::-p-aria([name="User group description"])`).fill('Coaching staff');
    await a.focus(`${create} ::-p-aria([name="Bob"][role="checkbox"])`);
    await a.keyboard.press('Space');
    await a.focus(`${create} ::-p-aria([name="User group name"])`);
    await a.keyboard.press('Enter');
    await a.waitForSelector(`${group('coaches')} ::-p-aria([name="Bob"][role="cell"])`);
    await a.waitForSelector(`${group('coaches')} ${byText('1 member')}`);
    await a.locator(`${create} ::-p-aria([name="User group name"])`).fill('coaches');
    await a.locator(`${create} ::-p-aria([name="Create"][role="button"])`).click();
    await a.waitForSelector(`${create} ${byText("User group 'coaches' already exists.")}`);
    await a.select(`${group('coaches')} select`, await idOf('Carol Jones'));
    await a.locator(`${group('coaches')} ::-p-aria([name="Add"][role="button"])`).click();
    await a.waitForSelector(`${group('coaches')} ::-p-aria([name="Carol Jones"][role="cell"])`);
    await a.locator(`${group('coaches')} ::-p-aria([name="Remove Bob"][role="button"])`).click();
    await a.waitForFunction((s) => !document.querySelector(s)?.textContent.includes('Bob'), { timeout }, 'li[aria-label="coaches"] table');
    const info = named('Change group info of coaches', 'form');
    await a.locator(`${info} ::-p-aria([name="User group name"])`).fill('rowing coaches');
    await a.locator(`${info} ::-p-aria([name="User group description"])`).fill('Coaches of the rowing squad');
    await a.locator(`${info} ::-p-aria([name="Save changes"][role="button"])`).click();
    await a.waitForSelector(group('rowing coaches'));
    const { members } = await call(a, 'GET', '/users');
    const carol = members.find((u) => u.full_name === 'Carol Jones').user_id;
    const saved = (await call(a, 'GET', '/user_groups')).user_groups.filter((g) => !g.is_system_group);
    assert.deepEqual(saved.map((g) => [g.name, g.description, g.members]), [['rowing coaches', 'Coaches of the rowing squad', [carol]]]);
    for (const theme of ['light', 'dark']) assert.deepEqual(await axeViolations(a, theme), [], `User groups, ${theme} theme`);
    await a.emulateMediaFeatures([]);
    // At phone width, with the long name of the step above among the
    // people to choose and to add.
    await a.setViewport({ width: 360, height: 740, isMobile: true, hasTouch: true });
    await a.waitForSelector(group('rowing coaches')); // a touch screen reloads the page
    // The settings scroll in their own box: nothing may stick out of it.
    const overflow = await a.evaluate(() => {
      const view = document.querySelector('#settings-view');
      const edge = view.getBoundingClientRect().right + 1;
      const wide = [...view.querySelectorAll('*')].filter((n) => n.getBoundingClientRect().right > edge);
      return { page: document.documentElement.scrollWidth, box: view.scrollWidth - view.clientWidth, wide: wide.slice(0, 4).map((n) => n.tagName + (n.getAttribute('aria-label') ? ` ${n.getAttribute('aria-label')}` : '')) };
    });
    assert.deepEqual(overflow, { page: 360, box: 0, wide: [] }, 'User groups at 360 px');
    await a.$eval(group('rowing coaches'), (n) => n.scrollIntoView());
    await a.screenshot({ path: join(out, 'phone-alice-user-groups.png') });
    await a.setViewport({ width: 1280, height: 800 });
    // Zulip asks first: dismissed, the group stays.
    const asked = [];
    const answer = (yes) => a.once('dialog', (d) => { asked.push(d.message()); return yes ? d.accept() : d.dismiss(); });
    answer(false);
    await a.locator(named('Deactivate rowing coaches', 'button')).click();
    assert.deepEqual(asked, ['Deactivate rowing coaches?\n\nYou can always reactivate this group later.'], 'asked before deactivating');
    await pause(300);
    assert.equal((await call(a, 'GET', '/user_groups')).user_groups.find((g) => g.name === 'rowing coaches')?.deactivated, false, 'kept when dismissed');
    answer(true);
    await a.locator(named('Deactivate rowing coaches', 'button')).click();
    await a.waitForSelector(byText('There are no user groups you can view in this organization.'));
    const after = (await call(a, 'GET', '/user_groups', { include_deactivated_groups: true })).user_groups.find((g) => g.name === 'rowing coaches');
    assert.equal(after?.deactivated, true, 'deactivated, and kept');
  });

  await t.test('user groups: another person\'s changes show live, and at 360 px the members table keeps its headers on one line', async () => {
    await openSettings(a, 'User groups');
    await a.waitForSelector(byText('There are no user groups you can view in this organization.'));
    const { members } = await call(b, 'GET', '/users');
    const id = (name) => members.find((u) => u.full_name === name).user_id;
    const long = 'Bartholomew Maximilian Featherstonehaugh-Smythe';
    const group = (g) => `::-p-aria([name=${JSON.stringify(g)}][role="listitem"])`;
    // Bob's changes, made from his page, reach Alice's without a reload.
    const { group_id: crew } = await call(b, 'POST', '/user_groups/create', { name: 'night crew', description: 'Rowing after dark', members: [id('Bob'), id(long)] });
    await a.waitForSelector(`${group('night crew')} ::-p-aria([name=${JSON.stringify(long)}][role="cell"])`);
    await call(b, 'PATCH', `/user_groups/${crew}`, { name: 'night rowers' });
    await a.waitForSelector(group('night rowers'));
    await call(b, 'POST', `/user_groups/${crew}/members`, { delete: [id('Bob')] });
    await a.waitForSelector(`${group('night rowers')} ${byText('1 member')}`);
    await a.setViewport({ width: 360, height: 740, isMobile: true, hasTouch: true });
    await a.waitForSelector(group('night rowers')); // a touch screen reloads the page
    const headers = await a.$$eval('table[aria-label="Members of night rowers"] th', (ths) => ths.map((th) => {
      const text = document.createRange();
      text.selectNodeContents(th);
      return [th.textContent, text.getClientRects().length];
    }));
    assert.deepEqual(headers, [['Name', 1], ['Email', 1], ['Actions', 1]], 'each header on one line at 360 px');
    assert.equal(await a.evaluate(() => document.documentElement.scrollWidth), 360, 'nothing wider than the page');
    await a.setViewport({ width: 1280, height: 800 });
    await call(b, 'POST', `/user_groups/${crew}/deactivate`);
    await a.waitForSelector(byText('There are no user groups you can view in this organization.'));
  });

  await t.test('user groups: what Alice is typing stays while another person\'s change draws the page anew, and is sent', async () => {
    await openSettings(a, 'User groups');
    const create = named('Create user group', 'form');
    const name = `${create} ::-p-aria([name="User group name"])`;
    const description = `${create} ::-p-aria([name="User group description"])`;
    const box = `${create} ::-p-aria([name="Bob"][role="checkbox"])`;
    await a.locator(name).fill('lifeguards');
    await a.focus(box);
    await a.keyboard.press('Space');
    await a.focus(description);
    await a.keyboard.type('On the jetty');
    // Bob's new group reaches Alice's page, which draws the tab anew.
    const bob = (await call(b, 'GET', '/users')).members.find((u) => u.full_name === 'Bob').user_id;
    const { group_id: crew } = await call(b, 'POST', '/user_groups/create', { name: 'harbour crew', description: 'Boats in and out', members: [bob] });
    await a.waitForSelector('::-p-aria([name="harbour crew"][role="listitem"])');
    assert.deepEqual(await Promise.all([name, description].map((s) => a.$eval(s, (n) => n.value))), ['lifeguards', 'On the jetty'], 'what she typed is kept');
    assert.equal(await a.$eval(box, (n) => n.checked), true, 'and what she ticked');
    assert.equal(await a.$eval(description, (n) => n === document.activeElement && n.selectionStart === n.value.length), true, 'and where she was typing');
    await a.keyboard.type(' at dawn');
    await a.keyboard.press('Enter');
    await a.waitForSelector('::-p-aria([name="lifeguards"][role="listitem"])');
    const made = (await call(a, 'GET', '/user_groups')).user_groups.find((g) => g.name === 'lifeguards');
    assert.deepEqual([made.description, made.members], ['On the jetty at dawn', [bob]], 'sent whole');
    assert.equal(await a.$eval(name, (n) => n.value), '', 'and the form drawn empty again');
    await call(b, 'POST', `/user_groups/${crew}/deactivate`);
    await call(a, 'POST', `/user_groups/${made.id}/deactivate`);
    await a.waitForSelector(byText('There are no user groups you can view in this organization.'));
  });

  await t.test('screenshots at desktop and phone widths', async () => {
    await a.screenshot({ path: join(out, 'desktop-alice.png') });
    await b.screenshot({ path: join(out, 'desktop-bob.png') });
    await b.setViewport({ width: 390, height: 844, isMobile: true, hasTouch: true });
    await b.screenshot({ path: join(out, 'phone-bob.png') });
    await b.click('#menu-toggle');
    await b.screenshot({ path: join(out, 'phone-bob-menu.png') });
    await b.click('#menu-toggle');
    await b.setViewport({ width: 1280, height: 800 });
  });

  await t.test('a server restart mid-session is recovered without a reload', async () => {
    for (const page of [a, b]) await page.evaluate(() => { window.zuliteStayed = true; });
    console.log('RESTART');
    const answer = await lines.next();
    assert.equal(answer.value, 'RESTARTED');
    await narrowTo(a, 'general');
    // The first send may race the page's reconnection; the page says so.
    let error = 'not sent';
    for (let i = 0; i < 20 && error; i++) {
      error = await send(a, 'After the restart');
      if (error) await new Promise((r) => setTimeout(r, 250));
    }
    assert.equal(error, '');
    await waitText(b, '#messages .msg .content', 'After the restart');
    for (const page of [a, b]) assert.equal(await page.evaluate(() => window.zuliteStayed), true, 'the page was not reloaded');
    await b.waitForFunction(() => document.querySelector('#connection').textContent === '', { timeout });
  });

  await t.test('log out ends the session', async () => {
    await Promise.all([b.waitForNavigation(), b.click('#logout')]);
    await b.waitForSelector('#login-view:not([hidden])', { timeout });
    const status = await b.evaluate(async () => (await fetch('/json/users/me')).status);
    assert.equal(status, 401);
  });

  await t.test('a new password ends an open page at once', async () => {
    console.log(`PASSWORD ${alice.email}`);
    assert.equal((await lines.next()).value, 'PASSWORD CHANGED');
    const started = Date.now();
    await a.waitForSelector('#login-view:not([hidden])', { timeout: 5000 });
    report('new_password_to_login_ms', Date.now() - started);
  });

  await t.test('no script errors and no policy violations', async () => {
    const problems = [...a.problems, ...b.problems].filter((p) => !/the server is restarting|Failed to fetch|NetworkError|AbortError|signal is aborted/i.test(p));
    assert.deepEqual(problems, []);
  });
});

// Issue 33: a newcomer joins by a reusable invitation link, on zulite's
// own sign-up page, found by its visible text and roles, and lands in
// the web client logged in. The link is made with Alice's API key (her
// password is the one the first block set last, or her first).
test('a newcomer signs up by an invitation link', { timeout: 60_000 }, async (t) => {
  let key;
  for (const password of ['a-new-password-1', alice.password]) {
    const r = await fetch(`${site}/api/v1/fetch_api_key`, { method: 'POST', body: new URLSearchParams({ username: alice.email, password }) });
    if (r.ok) { key = (await r.json()).api_key; break; }
  }
  assert.ok(key, 'Alice logs in to the API');
  const auth = { Authorization: 'Basic ' + Buffer.from(`${alice.email}:${key}`).toString('base64') };
  const made = await (await fetch(`${site}/api/v1/invites/multiuse`, { method: 'POST', headers: auth, body: new URLSearchParams({ invite_as: '400' }) })).json();
  assert.equal(made.result, 'success', JSON.stringify(made));
  assert.match(made.invite_link, /\/join\/[a-z2-7]{24}\/$/);
  const link = made.invite_link.replace(/^https?:\/\/[^/]+/, site);

  const browser = await puppeteer.launch({ executablePath: process.env.CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  t.after(() => browser.close());
  const page = await (await browser.createBrowserContext()).newPage();
  page.setDefaultTimeout(timeout);
  const problems = [];
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  // A refused form answers 400, which the browser logs as a failed load.
  page.on('console', (m) => { if (m.type() === 'error' && !/Failed to load resource/.test(m.text())) problems.push(`console: ${m.text()}`); });
  await page.goto(link, { waitUntil: 'load' });
  await page.waitForSelector(named(`Join ${realm}`, 'heading'));

  for (const theme of ['light', 'dark']) {
    await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: theme }]);
    await page.evaluate(axeSource);
    const found = await page.evaluate(async () => (await window.axe.run(document, { resultTypes: ['violations'] })).violations
      .filter((v) => v.impact === 'critical' || v.impact === 'serious')
      .map((v) => `${v.id} (${v.impact}): ${v.nodes.slice(0, 2).map((n) => n.target.join(' ')).join('; ')}`));
    assert.deepEqual(found, [], `the sign-up page, ${theme} theme`);
  }
  await page.emulateMediaFeatures([]);
  if (out) writeFileSync(join(out, 'signup.png'), await page.screenshot());

  // A taken address is refused with Zulip's words, the form kept.
  await page.locator(named('E-mail', 'textbox')).fill(bob.email);
  await page.locator(named('Full name', 'textbox')).fill('Newcomer');
  await page.locator(named('Password')).fill('carols-password-1');
  await Promise.all([page.waitForNavigation(), page.click(named('Sign up', 'button'))]);
  await page.waitForSelector(`[role=alert]${byText(`${bob.email} already has an account`)}`);

  await page.locator(named('E-mail', 'textbox')).fill('newcomer@example.com');
  await page.locator(named('Password')).fill('carols-password-1');
  await Promise.all([page.waitForNavigation(), page.click(named('Sign up', 'button'))]);
  const refused = await page.evaluate(() => document.querySelector('[role=alert]')?.textContent ?? '');
  assert.equal(refused, '', 'the sign-up is refused');
  await page.waitForSelector('#app-view:not([hidden])');
  const me = await page.evaluate(async () => (await (await fetch('/accounts/session')).json()).email);
  assert.equal(me, 'newcomer@example.com', 'the newcomer is logged in');

  // Revoked, the link opens Zulip's page for a dead link.
  const list = await (await fetch(`${site}/api/v1/invites`, { headers: auth })).json();
  const mine = list.invites.find((i) => i.link_url === made.invite_link);
  assert.ok(mine, 'the link is listed');
  const revoked = await (await fetch(`${site}/api/v1/invites/multiuse/${mine.id}`, { method: 'DELETE', headers: auth })).json();
  assert.equal(revoked.result, 'success');
  const dead = await (await browser.createBrowserContext()).newPage();
  await dead.goto(link, { waitUntil: 'load' });
  await dead.waitForSelector(named('Whoops. The confirmation link has expired or been deactivated.', 'heading'));
  assert.deepEqual(problems, []);
});
