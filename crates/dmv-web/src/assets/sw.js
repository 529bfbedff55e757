// The web UI's service worker. Thumbnails are named by their content's id,
// so a kept one is never stale: they are answered from the cache first and
// the last THUMBS kept, for the folders seen recently to show offline.
// Pages are asked of the network first, a copy of the last PAGES kept for
// when it cannot answer. A phone's "Share → DMV" posts its photos to
// /-/share: they are kept here until the upload page sends them.
'use strict';
var THUMBS = 2000, PAGES = 50;

function trim(name, most) {
  return caches.open(name).then(function (c) {
    return c.keys().then(function (keys) {
      return Promise.all(keys.slice(0, Math.max(0, keys.length - most)).map(function (k) { return c.delete(k); }));
    });
  });
}

self.addEventListener('install', function () { self.skipWaiting(); });
self.addEventListener('activate', function (e) { e.waitUntil(self.clients.claim()); });

self.addEventListener('fetch', function (e) {
  var req = e.request, url = new URL(req.url);
  if (url.origin !== location.origin) return;
  if (req.method === 'POST' && url.pathname === '/-/share') {
    e.respondWith(req.formData().then(function (form) {
      var files = form.getAll('photos').filter(function (f) { return f && f.name !== undefined; });
      return caches.delete('dmv-shared').then(function () { return caches.open('dmv-shared'); }).then(function (c) {
        return Promise.all(files.map(function (f, i) {
          return c.put('/-/shared/' + i, new Response(f, { headers: {
            'content-type': f.type || 'application/octet-stream',
            'x-name': encodeURIComponent(f.name), 'x-modified': String(f.lastModified || 0) } }));
        }));
      }).then(function () { return Response.redirect('/-/share?n=' + files.length, 303); });
    }));
    return;
  }
  if (req.method !== 'GET') return;
  if (/^\/[^/]+\/thumb\/[0-9a-f]{64}$/.test(url.pathname)) {
    e.respondWith(caches.open('dmv-thumbs').then(function (c) {
      return c.match(req).then(function (kept) {
        return kept || fetch(req).then(function (r) {
          if (r.ok) { c.put(req, r.clone()).then(function () { return trim('dmv-thumbs', THUMBS); }); }
          return r;
        });
      });
    }));
    return;
  }
  if (req.mode === 'navigate' && /^\/[^/]+\/tree\//.test(url.pathname)) {
    e.respondWith(fetch(req).then(function (r) {
      if (r.ok) {
        var copy = r.clone();
        caches.open('dmv-pages').then(function (c) { return c.put(req, copy); }).then(function () { return trim('dmv-pages', PAGES); });
      }
      return r;
    }, function () {
      return caches.open('dmv-pages').then(function (c) { return c.match(req); }).then(function (kept) {
        return kept || new Response('Offline, and this folder was not seen recently.', { status: 503, headers: { 'content-type': 'text/plain; charset=utf-8' } });
      });
    }));
  }
});
