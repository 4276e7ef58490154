// The one header of every page of the crow web UI: the brand, the main
// navigation (a compact menu on narrow screens) and "Forget API key".
import { $, el } from './dom.js';

// PAGES are the nav entries: [name, path, label].
export const PAGES = [
  ['overview', '/ui/', 'Overview'],
  ['projects', '/ui/projects', 'Projects'],
  ['memories', '/ui/memories', 'Memories'],
  ['conflicts', '/ui/conflicts', 'Conflicts'],
  ['instances', '/ui/instances', 'Instances'],
  ['notifications', '/ui/notifications', 'Notifications'],
  ['verify', '/ui/verify', 'Verify']
];

// renderHeader fills <header id="top"> with current marked as the page
// shown ("Forget API key" is shown by api.js once a key is in use).
export function renderHeader(current) {
  const header = $('top');
  const links = PAGES.map(([name, path, label]) =>
    el('li', null, el('a', { href: path, 'aria-current': name === current ? 'page' : null }, label)));
  const list = el('ul', { id: 'nav-links' }, ...links);
  const label = (PAGES.find(p => p[0] === current) || [, , 'Menu'])[2];
  const toggle = el('button', { type: 'button', id: 'nav-toggle', class: 'nav-toggle', 'aria-expanded': 'false', 'aria-controls': 'nav-links' },
    el('span', { class: 'nav-icon', 'aria-hidden': 'true' }, '☰'), ' ' + label);
  toggle.addEventListener('click', () => {
    const open = toggle.getAttribute('aria-expanded') !== 'true';
    toggle.setAttribute('aria-expanded', String(open));
    header.classList.toggle('nav-open', open);
  });
  const forget = el('button', { type: 'button', id: 'forget-key', class: 'link', hidden: true }, 'Forget API key');
  header.replaceChildren(
    el('a', { class: 'brand', href: '/ui/' }, 'crow'),
    toggle,
    el('nav', { 'aria-label': 'Main' }, list),
    forget);
}
