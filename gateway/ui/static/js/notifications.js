// The notifications page: conflicts and instance problems that need a look.
import { api, failed, boot } from './api.js';
import { $, el, str, obj, arr, num, fmtTime, setText, showStatus, PAGE_SIZE } from './dom.js';

var ns = { items: [], cursor: '', unread: 0 };

// linkLabel returns the text of a notification link, or '' when the link
// is not a page of this UI (only /ui/ pages are linked).
function linkLabel(link) {
  link = str(link);
  if (!/^\/ui\/[A-Za-z0-9_\-\/?=&.]*$/.test(link) || link.indexOf('//') >= 0) return '';
  if (link.indexOf('/ui/conflicts') === 0) return 'Open the recovery view';
  if (link.indexOf('/ui/instances') === 0) return 'Open instances';
  return 'Open';
}

function renderNotifications() {
  var list = $('notification-list');
  list.replaceChildren.apply(list, ns.items.map(function (n) {
    var id = str(n.id);
    var label = linkLabel(n.link);
    var action;
    if (n.read) {
      action = el('span', { class: 'badge', data: { state: 'read' } }, 'read');
    } else {
      action = el('button', { type: 'button', class: 'small', data: { read: id } }, 'Mark read');
      action.addEventListener('click', function () { markRead(id, action); });
    }
    return el('li', { class: n.read ? 'read' : 'unread', data: { id: id } },
      el('div', { class: 'head' },
        el('strong', null, str(n.title) || '(no title)'),
        n.priority ? el('span', { class: 'badge ' + (n.priority === 'high' ? 'high' : '') }, str(n.priority)) : null,
        el('span', { class: 'muted' }, str(n.kind)),
        el('span', { class: 'muted', title: str(n.created_at) }, fmtTime(n.created_at)),
        action),
      n.body ? el('p', { class: 'body' }, str(n.body)) : null,
      label ? el('a', { href: str(n.link) }, label) : null);
  }));
  $('notification-empty').hidden = ns.items.length > 0;
  $('notification-more').hidden = !ns.cursor;
  setText('unread-summary', ns.unread + ' unread.');
}

function loadNotifications(append) {
  var q = new URLSearchParams();
  q.set('limit', String(PAGE_SIZE));
  if (append && ns.cursor) q.set('cursor', ns.cursor);
  return api('GET', '/v1/notifications?' + q.toString()).then(function (d) {
    var list = arr(d.notifications).map(obj);
    ns.items = append ? ns.items.concat(list) : list;
    ns.cursor = typeof d.next_cursor === 'string' ? d.next_cursor : '';
    ns.unread = num(d.unread);
    renderNotifications();
  }, failed('Could not load the notifications'));
}

function markRead(id, button) {
  button.disabled = true;
  api('POST', '/v1/notifications/' + encodeURIComponent(id) + '/read').then(function () {
    showStatus('ok', 'Marked the notification read.');
    return loadNotifications(false);
  }, function (err) {
    button.disabled = false;
    failed('Could not mark the notification read')(err);
  });
}

var notificationsPage = {
  init: function () {
    $('notification-more').addEventListener('click', function () { loadNotifications(true); });
  },
  load: function () { loadNotifications(false); }
};

boot(Object.assign({ name: 'notifications' }, notificationsPage));
