// dom.js: elements built from text, and the one way HTML gets in.

// Trusted Types: the only HTML the page sets is a message's rendering by
// the server (the Content-Security-Policy allows this policy alone).
const policy = window.trustedTypes
  ? window.trustedTypes.createPolicy('zulite', { createHTML: (html) => html })
  : { createHTML: (html) => html };

// serverHTML sets an element's content to HTML rendered by the server.
export function serverHTML(node, html) {
  node.innerHTML = policy.createHTML(html);
  for (const a of node.querySelectorAll('a[href]')) {
    const href = a.getAttribute('href');
    if (!/^(https?:|mailto:|\/|#)/i.test(href)) a.removeAttribute('href');
    else if (!href.startsWith('/') && !href.startsWith('#')) {
      a.target = '_blank';
      a.rel = 'noopener noreferrer';
    }
  }
  // Unicode emoji come as :name: text in a span whose class names the
  // code point (Zulip draws them from a sprite sheet): the text becomes
  // the emoji, and the name stays its label.
  for (const span of node.querySelectorAll('span.emoji')) {
    const code = [...span.classList].find((c) => c.startsWith('emoji-'))?.slice(6);
    if (code) span.textContent = emojiChar(code);
  }
  // An uploaded image shows under its paragraph, sized, as Zulip's
  // message_inline_image does; the link opens it whole.
  for (const a of node.querySelectorAll('a[href^="/user_uploads/"]')) {
    const href = a.getAttribute('href');
    if (!/\.(png|jpe?g|gif|webp|bmp)$/i.test(href)) continue;
    const block = a.closest('p, li, blockquote') || a;
    block.after(el('div', { class: 'message_inline_image' },
      el('a', { href, target: '_blank', title: a.textContent }, el('img', { src: href, alt: a.textContent, loading: 'lazy' }))));
  }
  return node;
}

// el builds an element: attributes and properties, then children, strings
// going in as text.
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') node.className = v;
    else if (k === 'text') node.textContent = v;
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(node.dataset, v);
    else node.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    node.append(c instanceof Node ? c : String(c));
  }
  return node;
}

export const $ = (id) => document.getElementById(id);

// emojiChar turns a Unicode emoji code ("1f44d", "1f1fa-1f1f8") into text.
export function emojiChar(code) {
  try {
    return String.fromCodePoint(...code.split('-').map((h) => parseInt(h, 16)));
  } catch {
    return '?';
  }
}

// timeText is a message's time of day: its day is on the recipient bar.
export function timeText(seconds) {
  return new Date(seconds * 1000).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
}

// dayText is a day as Zulip's recipient bar says it: Today, Yesterday,
// the month and day, and the year when it is not this one.
export function dayText(seconds) {
  const d = new Date(seconds * 1000);
  const now = new Date();
  const yesterday = new Date(now.getFullYear(), now.getMonth(), now.getDate() - 1);
  if (d.toDateString() === now.toDateString()) return 'Today';
  if (d.toDateString() === yesterday.toDateString()) return 'Yesterday';
  const opts = { month: 'short', day: 'numeric' };
  if (d.getFullYear() !== now.getFullYear()) opts.year = 'numeric';
  return d.toLocaleDateString([], opts);
}

// moveFocus moves the keyboard's place by step among targets (j/k down a
// list of rows), from the one whose row holds the focus, or to the first.
export function moveFocus(targets, step, rowOf = (t) => t) {
  if (!targets.length) return;
  const i = targets.findIndex((t) => rowOf(t).contains(document.activeElement));
  targets[i < 0 ? 0 : Math.max(0, Math.min(targets.length - 1, i + step))].focus();
}
