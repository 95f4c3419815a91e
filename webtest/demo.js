// demo.js: seeds a believable organisation through the API, as its people
// would from the page, and takes the README's screenshots of it: desktop
// and phone, light and dark. Run by TestWeb_DemoScreenshots (go test
// -run TestWeb_DemoScreenshots with ZULITE_DEMO_SCREENSHOTS=docs), which
// starts the binary with its owner and sets ZULITE_SITE, CHROMIUM,
// OUT_DIR, OWNER_EMAIL and OWNER_PASSWORD. Emoji need a colour emoji
// font (Debian: apt-get install fonts-noto-color-emoji).

import { deflateSync } from 'node:zlib';
import { join } from 'node:path';
import puppeteer from 'puppeteer-core';

const site = process.env.ZULITE_SITE;
const out = process.env.OUT_DIR;
const owner = { email: process.env.OWNER_EMAIL, password: process.env.OWNER_PASSWORD };

const people = [
  { key: 'tomas', full_name: 'Tomás Rivera', email: 'tomas@lakeside.example' },
  { key: 'priya', full_name: 'Priya Natarajan', email: 'priya@lakeside.example' },
  { key: 'jonas', full_name: 'Jonas Berg', email: 'jonas@lakeside.example' },
  { key: 'ellen', full_name: 'Ellen Park', email: 'ellen@lakeside.example' },
];

async function login(browser, who) {
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  await page.setViewport({ width: 1280, height: 800 });
  await page.goto(site, { waitUntil: 'load' });
  await page.waitForSelector('#login-form:not([hidden])');
  await page.locator('#login-email').fill(who.email);
  await page.locator('#login-password').fill(who.password);
  await page.click('#login-form button[type=submit]');
  await page.waitForSelector('#app-view:not([hidden]) #channels li');
  return page;
}

const call = (page, method, path, params) => page.evaluate(async (m, p, q) => (await import('/web/api.js')).api(m, p, q), method, path, params);

// courseMap draws a small picture of a regatta course: water, two
// buoy lines and the start, as an uploaded PNG.
function courseMap(width = 320, height = 160) {
  const rows = [];
  for (let y = 0; y < height; y++) {
    const row = [0];
    for (let x = 0; x < width; x++) {
      let [r, g, b] = [70 + (y % 23 < 2 ? 20 : 0), 140 + Math.round(30 * Math.sin(x / 17)), 200];
      if ((y === 50 || y === 110) && x % 24 < 6 && x > 30 && x < 290) [r, g, b] = [240, 120, 40];
      if (x > 28 && x < 34 && y > 40 && y < 120) [r, g, b] = [250, 250, 250];
      if (x > 286 && x < 292 && y > 40 && y < 120) [r, g, b] = [30, 30, 30];
      row.push(r, g, b);
    }
    rows.push(Buffer.from(row));
  }
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (buf) => {
    let c = 0xffffffff;
    for (const byte of buf) c = crcTable[(c ^ byte) & 0xff] ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type, data) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type), data]);
    const sum = Buffer.alloc(4);
    sum.writeUInt32BE(crc(body));
    return Buffer.concat([len, body, sum]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8;
  header[9] = 2;
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', header),
    chunk('IDAT', deflateSync(Buffer.concat(rows))), chunk('IEND', Buffer.alloc(0))]);
}

const browser = await puppeteer.launch({ executablePath: process.env.CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
try {
  const maya = await login(browser, owner);
  const channels = [
    { name: 'regatta', description: 'Racing: entries, crews and results' },
    { name: 'boathouse', description: 'Equipment, repairs and the building' },
    { name: 'social', description: 'Dinners, birthdays and the summer barbecue' },
  ];
  await call(maya, 'POST', '/users/me/subscriptions', { subscriptions: channels });
  const pages = { maya };
  for (const p of people) {
    const password = `${p.key}-lakeside-1`;
    await call(maya, 'POST', '/users', { full_name: p.full_name, email: p.email, password });
    pages[p.key] = await login(browser, { email: p.email, password });
    // Away from any message list while the club talks, so that what
    // they have not looked at stays unread.
    await pages[p.key].evaluate(() => { location.hash = '#inbox'; });
    await call(pages[p.key], 'POST', '/users/me/subscriptions', { subscriptions: channels.map(({ name }) => ({ name })) });
  }
  const ids = {};
  for (const u of (await call(maya, 'GET', '/users')).members) ids[u.email] = u.user_id;
  const say = (who, to, topic, content) => call(pages[who], 'POST', '/messages', { type: 'stream', to, topic, content });
  const react = (who, id, emoji_name) => call(pages[who], 'POST', `/messages/${id}/reactions`, { emoji_name });

  await say('jonas', 'boathouse', 'Spring cleaning', 'The new oars arrived, they are in the rack by the door.');
  await say('ellen', 'boathouse', 'Spring cleaning', 'Thanks! Does anyone have the key for the trailer shed?');
  await say('tomas', 'social', 'Summer barbecue', 'Barbecue on the 21st, bring something for the grill :hamburger:');
  const start = await say('maya', 'regatta', "Saturday's race", 'Morning all! The course is set for Saturday :tada:');
  await say('maya', 'regatta', "Saturday's race", 'Start is at **9:30** from the north pontoon, so boats on the water by **9:00**.');
  await say('tomas', 'regatta', "Saturday's race", "Great. Who's bringing the trailer?");
  const trailer = await say('priya', 'regatta', "Saturday's race", "I can, I'll pick it up Friday evening and check the `rigger bolts` while I'm there.");
  await say('jonas', 'regatta', "Saturday's race", 'Crew list so far:\n\n| Seat | Rower |\n|---|---|\n| Stroke | Priya |\n| 3 | Tomás |\n| 2 | Jonas |\n| Bow | Ellen |');
  await say('ellen', 'regatta', "Saturday's race", 'Looks right to me :+1:');
  const upload = await maya.evaluate(async (bytes) => {
    const body = new FormData();
    body.append('file', new File([new Uint8Array(bytes)], 'course-map.png', { type: 'image/png' }));
    const { csrf } = await import('/web/api.js');
    return (await fetch('/json/user_uploads', { method: 'POST', body, headers: { 'X-CSRFToken': csrf() } })).json();
  }, [...courseMap()]);
  await say('maya', 'regatta', "Saturday's race", `Here is the course map, buoys every 250 m:\n[course-map.png](${upload.url})`);
  await react('tomas', start.id, 'tada');
  await react('priya', start.id, 'tada');
  await react('maya', trailer.id, 'heart');
  await react('jonas', trailer.id, '+1');
  await say('tomas', 'regatta', 'Entries', 'Entries close on Wednesday, the fee is paid.');
  await call(pages.maya, 'POST', '/messages', { type: 'direct', to: JSON.stringify([ids[people[1].email]]), content: 'Could you send me the entry receipt when you have a minute?' });

  // Priya's view: the race topic, unread elsewhere.
  const priya = pages.priya;
  await priya.reload({ waitUntil: 'load' });
  await priya.waitForSelector('#channels li[data-channel="regatta"]');
  const regatta = (await call(priya, 'GET', '/get_stream_id', { stream: 'regatta' })).stream_id;
  await priya.evaluate((id) => { location.hash = `#narrow/channel/${id}-regatta/topic/Saturday's.20race`; }, regatta);
  await priya.waitForFunction(() => document.querySelectorAll('[role=feed] article').length >= 7 && !document.querySelector('[aria-busy]'));
  await priya.waitForFunction(() => [...document.querySelectorAll('.message_inline_image img')].every((i) => i.complete && i.naturalWidth > 0));
  const bottom = () => priya.evaluate(() => { const m = document.querySelector('#messages'); m.scrollTop = m.scrollHeight; });
  const shoot = async (size) => {
    for (const theme of ['light', 'dark']) {
      await priya.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: theme }]);
      await bottom();
      await priya.screenshot({ path: join(out, `web-${size}-${theme}.png`) });
    }
  };
  await priya.setViewport({ width: 1280, height: 1024 });
  await priya.mouse.move(640, 1010); // over nothing that shows on hover
  await bottom();
  await shoot('desktop');
  // A phone's viewport reloads the page: wait for the conversation again.
  await priya.setViewport({ width: 390, height: 844, isMobile: true, hasTouch: true, deviceScaleFactor: 1 });
  await priya.waitForFunction(() => document.querySelectorAll('[role=feed] article').length >= 7 && !document.querySelector('[aria-busy]'));
  await priya.waitForFunction(() => [...document.querySelectorAll('.message_inline_image img')].every((i) => i.complete && i.naturalWidth > 0));
  await priya.mouse.move(200, 835);
  await shoot('phone');
} finally {
  await browser.close();
}
