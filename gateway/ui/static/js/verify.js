// The public verify page: does the chain hold the same state hashes? It needs no key and never sends one.
import { publicGet, boot } from './api.js';
import { $, obj, setText, clearStatus, showStatus } from './dom.js';
import { resetVerify, renderVerify, verifyPath } from './anchors.js';

var vs = { gen: 0 };

function runVerify(name) {
  var gen = ++vs.gen;
  clearStatus();
  setText('verify-title', 'Project ' + name);
  resetVerify('Reading the chain…');
  $('verify-result').hidden = false;
  $('verify-submit').disabled = true;
  publicGet(verifyPath(name)).then(function (d) {
    if (gen === vs.gen) renderVerify(obj(d));
  }, function (err) {
    if (gen !== vs.gen) return;
    $('verify-result').hidden = true;
    showStatus('error', 'Could not verify ' + name + ': ' + err.message);
  }).then(function () {
    if (gen === vs.gen) $('verify-submit').disabled = false;
  });
}

var verifyPage = {
  public: true,
  init: function () {
    $('verify-form').addEventListener('submit', function (ev) {
      ev.preventDefault();
      var name = $('verify-name').value.trim();
      if (!name) return;
      try { history.replaceState(null, '', '/ui/verify?project=' + encodeURIComponent(name)); } catch (e) { /* ignore */ }
      runVerify(name);
    });
  },
  load: function () {
    var name = (new URLSearchParams(location.search).get('project') || '').trim();
    $('verify-name').value = name;
    if (name) runVerify(name);
    else $('verify-name').focus();
  }
};

boot(Object.assign({ name: 'verify' }, verifyPage));
