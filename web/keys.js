// keys.js: a few of Zulip's keys: c compose, x direct message, j/k next
// and previous message, n next unread topic, Esc back out.

export function bindKeys(actions) {
  document.addEventListener('keydown', (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const t = e.target;
    const typing = t instanceof HTMLInputElement || t instanceof HTMLTextAreaElement || t instanceof HTMLSelectElement;
    if (e.key === 'Escape') {
      actions.escape(typing);
      return;
    }
    if (typing) return;
    const action = { c: actions.compose, x: actions.directMessage, j: actions.next, k: actions.previous, n: actions.nextUnread }[e.key];
    if (action) {
      e.preventDefault();
      action();
    }
  });
}
