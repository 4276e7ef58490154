// The overview page: a tile per page with its counts.
import { api, boot } from './api.js';
import { str, obj, arr, num, setText, plural } from './dom.js';

var overview = {
  load: function () {
    setText('ov-conflicts', '…');
    setText('ov-instances', '…');
    setText('ov-unread', '…');
    setText('ov-projects', '…');
    api('GET', '/v1/projects').then(function (d) {
      var list = arr(d.projects).map(obj);
      var withState = list.filter(function (p) { return num(p.state_version) > 0; }).length;
      setText('ov-projects', list.length + ' project' + (list.length === 1 ? '' : 's') + ', ' + withState + ' with a state');
    }, function (err) { if (!err.auth) setText('ov-projects', 'unavailable: ' + err.message); });
    api('GET', '/v1/sync/conflicts?unresolved=true&limit=100').then(function (d) {
      var n = arr(d.conflicts).length;
      var more = d.next_cursor ? '+' : '';
      setText('ov-conflicts', n === 0 ? 'No unresolved conflicts' : n + more + ' unresolved conflict' + (n === 1 && !more ? '' : 's'));
    }, function (err) { if (!err.auth) setText('ov-conflicts', 'unavailable: ' + err.message); });
    api('GET', '/v1/instances').then(function (d) {
      var list = arr(d.instances);
      var online = list.filter(function (i) { return obj(i).status === 'online'; }).length;
      setText('ov-instances', list.length + ' instance' + (list.length === 1 ? '' : 's') + ', ' + online + ' online');
    }, function (err) { if (!err.auth) setText('ov-instances', 'unavailable: ' + err.message); });
    api('GET', '/v1/notifications?limit=1').then(function (d) {
      var n = num(d.unread);
      setText('ov-unread', n + ' unread notification' + (n === 1 ? '' : 's'));
    }, function (err) { if (!err.auth) setText('ov-unread', 'unavailable: ' + err.message); });
  }
};

boot(Object.assign({ name: 'overview' }, overview));
