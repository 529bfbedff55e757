// The web UI's behaviour beyond links and forms: every page works without
// it. A photo wall's lightbox (arrow keys, swipe, a comment at a tapped
// point), picking photos to download as one zip, the next page of a wall
// as it scrolls into view, exact times on a tap, logging in from an
// address's #token=, and the service worker that keeps recent thumbnails
// for offline use.
(function () {
  'use strict';
  var doc = document;

  // A date says "3 days ago"; a tap (phones have no hover) shows the exact time.
  doc.addEventListener('click', function (e) {
    var t = e.target.closest && e.target.closest('time[title]');
    if (!t || t.closest('a')) return;
    var shown = t.textContent; t.textContent = t.title; t.title = shown;
  });

  // A picture the server could not make a thumbnail of shows its name on
  // a plain tile, not the browser's broken-image glyph.
  doc.addEventListener('error', function (e) {
    var img = e.target;
    if (img.tagName !== 'IMG') return;
    img.classList.add('missing');
    var tile = img.closest('a.ph');
    if (tile) tile.classList.add('missing');
  }, true);

  // `dmv serve` prints an address whose fragment holds a token: log in with it
  // (the fragment never reaches the server's logs), then forget it.
  var login = doc.querySelector('form[action="/login"] input[name=token]');
  if (login && location.hash.indexOf('#token=') === 0) {
    login.value = decodeURIComponent(location.hash.slice(7));
    history.replaceState(null, '', location.pathname);
    login.form.submit();
  }

  if ('serviceWorker' in navigator && location.protocol !== 'file:') {
    navigator.serviceWorker.register('/sw.js').catch(function () {});
  }

  var wall = doc.getElementById('photos');
  if (!wall) return;
  var photos = function () { return Array.prototype.slice.call(doc.querySelectorAll('.wall a.ph')); };

  // A photo the server could not measure (its data not fetched yet: a
  // bucket's view) takes the shape of its thumbnail, which keeps the photo's.
  function reshape(img) {
    var a = img.parentNode;
    if (!a.hasAttribute('data-guess') || !img.naturalHeight) return;
    var r = Math.min(4, Math.max(0.25, img.naturalWidth / img.naturalHeight));
    a.style.setProperty('--r', r.toFixed(3));
    a.removeAttribute('data-guess');
  }
  wall.addEventListener('load', function (e) { if (e.target.tagName === 'IMG') reshape(e.target); }, true);
  photos().forEach(function (a) { var img = a.querySelector('img'); if (img && img.complete) reshape(img); });

  // The next page of the wall, fetched when its link comes into view.
  function more(link) {
    if (!('IntersectionObserver' in window)) return;
    var seen = new IntersectionObserver(function (entries) {
      if (!entries[0].isIntersecting) return;
      seen.disconnect();
      fetch(link.href, { credentials: 'same-origin' }).then(function (r) { return r.text(); }).then(function (text) {
        var page = new DOMParser().parseFromString(text, 'text/html');
        var next = page.getElementById('photos');
        if (!next) return;
        while (next.firstChild) wall.appendChild(doc.adoptNode(next.firstChild));
        var after = page.querySelector('a.more');
        if (after) { link.href = after.href; more(link); } else { link.remove(); }
      }).catch(function () {});
    }, { rootMargin: '800px' });
    seen.observe(link);
  }
  var next = doc.querySelector('a.more');
  if (next) more(next);

  // Picking: a tap picks or unpicks; the bar downloads the picked as one zip.
  var selectButton = doc.getElementById('select'), bar = doc.getElementById('picked');
  var picked = [];
  function showPicked() {
    bar.hidden = !doc.body.classList.contains('selecting');
    bar.querySelector('.count').textContent = picked.length + ' picked';
    var zip = bar.querySelector('a.zip');
    zip.hidden = picked.length === 0;
    zip.href = wall.dataset.zip + '?pick=' + picked.map(encodeURIComponent).join('%2F');
  }
  if (selectButton && bar) {
    selectButton.hidden = false;
    selectButton.addEventListener('click', function () {
      var on = doc.body.classList.toggle('selecting');
      selectButton.textContent = on ? 'done' : 'select';
      if (!on) { picked = []; photos().forEach(function (p) { p.classList.remove('picked'); }); }
      showPicked();
    });
  }

  // The lightbox: the photo fitted to the screen, its facts, previous and next.
  var box = doc.createElement('div'), at = -1;
  box.id = 'lightbox'; box.hidden = true;
  box.setAttribute('role', 'dialog'); box.setAttribute('aria-modal', 'true');
  box.innerHTML = '<div class="top"><span class="where"></span><span class="grow name"><span class="head"></span><span class="tail"></span></span>' +
    '<button type="button" class="mode" aria-pressed="false" hidden title="tap the photo where the comment points">comment</button>' +
    '<a class="details">details<span class="word"> and history</span></a><a class="download" download>download</a>' +
    '<button type="button" class="close" aria-label="close">✕</button></div>' +
    '<div class="stage"><img alt="the photo shown"></div><div class="note" hidden></div><div class="facts"></div>' +
    '<button type="button" class="nav prev" aria-label="previous photo">‹</button>' +
    '<button type="button" class="nav next" aria-label="next photo">›</button>';
  doc.body.appendChild(box);
  var img = box.querySelector('.stage img');
  // A long name keeps its end (a camera's number, the extension): the
  // ellipsis falls in its middle.
  function named(name) {
    var cut = Math.max(0, name.length - 12);
    box.querySelector('.name .head').textContent = name.slice(0, cut);
    box.querySelector('.name .tail').textContent = name.slice(cut);
    box.querySelector('.name').title = name;
  }
  // The comments on the photo shown: their markers over it, taken from its
  // page (which places them in proportions of the picture's own pixels),
  // and how many, linked to that page, where they are answered. The page
  // also says whether the viewer may comment: its form for a new comment
  // (the same endpoint, fields and login's secret) is what the lightbox's
  // own form posts, at a point tapped on the photo in its own pixels.
  var stage = box.querySelector('.stage'), overlay = doc.createElement('div'), said = doc.createElement('a');
  overlay.className = 'pins'; stage.appendChild(overlay);
  said.className = 'said'; said.hidden = true; box.insertBefore(said, box.querySelector('.facts').nextSibling);
  var mode = box.querySelector('.mode'), note = box.querySelector('.note');
  var asked = null, writing = null, point = null;
  // The photo's own box on the screen: the image fitted (object-fit: contain) in its element.
  function picture() {
    var r = img.getBoundingClientRect(), nw = img.naturalWidth, nh = img.naturalHeight;
    if (!nw || !nh) return r;
    var k = Math.min(r.width / nw, r.height / nh), w = nw * k, h = nh * k;
    return { left: r.left + (r.width - w) / 2, top: r.top + (r.height - h) / 2, width: w, height: h };
  }
  function place() {
    var s = stage.getBoundingClientRect(), r = picture();
    overlay.style.left = (r.left - s.left) + 'px'; overlay.style.top = (r.top - s.top) + 'px';
    overlay.style.width = r.width + 'px'; overlay.style.height = r.height + 'px';
  }
  // Markers, count and (for a writer) the comment form's fields from a file page.
  function read(page, href) {
    overlay.textContent = ''; said.hidden = true;
    page.querySelectorAll('.marked a.pin').forEach(function (a) {
      a.href = href + a.getAttribute('href');
      overlay.appendChild(doc.adoptNode(a));
    });
    var n = page.querySelectorAll('li.thread').length;
    if (n) { said.hidden = false; said.textContent = n + (n === 1 ? ' comment' : ' comments'); said.href = href + '#comments'; }
    var form = page.getElementById('new-comment'), marked = page.querySelector('.marked[data-w][data-h]');
    writing = null;
    if (form && marked) {
      writing = { action: form.getAttribute('action'), w: +marked.dataset.w, h: +marked.dataset.h, href: href, fields: {} };
      form.querySelectorAll('input[type=hidden]').forEach(function (i) { writing.fields[i.name] = i.value; });
    }
    // Who may comment on one photo may on all (the page has the form): the button stays.
    if (form) mode.hidden = false;
    mode.disabled = !writing;
    place();
  }
  function comments(p) {
    overlay.textContent = ''; said.hidden = true; asked = p.href; writing = null; mode.disabled = true;
    fetch(p.href, { credentials: 'same-origin' }).then(function (r) { return r.text(); }).then(function (text) {
      if (asked !== p.href) return;
      read(new DOMParser().parseFromString(text, 'text/html'), p.href);
    }).catch(function () {});
  }
  // Comment mode: off, a tap on the photo does nothing and a swipe moves
  // on; on, a tap (or a click) places a point and opens the form.
  function commenting(on) {
    box.classList.toggle('commenting', on);
    mode.setAttribute('aria-pressed', on ? 'true' : 'false');
    drop();
    if (on) { note.hidden = false; note.textContent = 'Tap the photo where the comment points.'; note.className = 'note hint'; }
  }
  mode.addEventListener('click', function () { commenting(!box.classList.contains('commenting')); });
  function drop() {
    point = null; note.hidden = true; note.textContent = ''; note.className = 'note';
    var pending = overlay.querySelector('.pending');
    if (pending) pending.remove();
  }
  img.addEventListener('click', function (e) {
    if (!box.classList.contains('commenting') || !writing || !img.naturalWidth) return;
    e.preventDefault();
    var r = picture(), f = function (v, lo, size) { return Math.min(Math.max((v - lo) / size, 0), 1); };
    var fx = f(e.clientX, r.left, r.width), fy = f(e.clientY, r.top, r.height);
    var x = Math.round(fx * writing.w), y = Math.round(fy * writing.h);
    var pending = overlay.querySelector('.pending');
    if (!pending) { pending = doc.createElement('span'); pending.className = 'pin point pending'; overlay.appendChild(pending); }
    pending.style.left = (x / writing.w * 100) + '%'; pending.style.top = (y / writing.h * 100) + '%';
    point = { x: x, y: y };
    if (!note.querySelector('form')) ask();
    note.querySelector('.at').textContent = 'at ' + x + ',' + y;
    note.querySelector('textarea').focus({ preventScroll: true });
  });
  // The small form: the text of a comment at the tapped point.
  function ask() {
    note.hidden = false; note.className = 'note';
    note.innerHTML = '<form><textarea name="text" rows="2" required aria-label="comment" placeholder="Say what to change"></textarea>' +
      '<div class="row"><span class="at"></span><span class="why" role="status"></span>' +
      '<button type="button" class="cancel">cancel</button><button type="submit" class="send">post</button></div></form>';
    var form = note.querySelector('form');
    form.querySelector('.cancel').addEventListener('click', function () { commenting(true); });
    form.addEventListener('submit', function (e) {
      e.preventDefault();
      var text = form.querySelector('textarea').value, w = writing, send = form.querySelector('.send');
      if (!w || !point || !text.trim()) return;
      var body = new URLSearchParams();
      Object.keys(w.fields).forEach(function (k) { body.append(k, w.fields[k]); });
      body.set('at', point.x + ',' + point.y); body.set('text', text);
      send.disabled = true;
      fetch(w.action, { method: 'POST', body: body, credentials: 'same-origin' }).then(function (r) {
        return r.text().then(function (t) { return { ok: r.ok, text: t }; });
      }).then(function (answer) {
        var page = new DOMParser().parseFromString(answer.text, 'text/html');
        if (!answer.ok) {
          send.disabled = false;
          var why = page.querySelector('main') || page.body;
          form.querySelector('.why').textContent = ((why && why.textContent.trim()) || 'not saved').slice(0, 200);
          return;
        }
        if (asked === w.href) { commenting(true); read(page, w.href); }
      }).catch(function () { send.disabled = false; form.querySelector('.why').textContent = 'not saved: no answer'; });
    });
  }
  img.addEventListener('load', place);
  window.addEventListener('resize', function () { if (!box.hidden) place(); });
  // The form opening or closing resizes the stage: the markers follow the photo.
  if ('ResizeObserver' in window) new ResizeObserver(function () { if (!box.hidden) place(); }).observe(stage);
  function show(i) {
    var all = photos();
    if (i < 0 || i >= all.length) return;
    at = i;
    var p = all[i];
    drop();
    if (box.classList.contains('commenting')) commenting(true);
    img.src = p.dataset.preview; img.alt = p.dataset.name;
    named(p.dataset.name);
    box.querySelector('.where').textContent = (i + 1) + ' / ' + all.length;
    box.querySelector('.facts').textContent = p.dataset.facts || '';
    box.querySelector('.details').href = p.href;
    box.querySelector('.download').href = p.dataset.preview.replace('/preview/', '/raw/') + '/' + encodeURIComponent(p.dataset.name) + '?download=1';
    box.hidden = false;
    comments(p);
    // The neighbours load while this one is looked at.
    [i - 1, i + 1].forEach(function (j) { if (all[j]) new Image().src = all[j].dataset.preview; });
  }
  function close() { box.hidden = true; at = -1; commenting(false); }
  box.querySelector('.close').addEventListener('click', close);
  box.querySelector('.prev').addEventListener('click', function () { show(at - 1); });
  box.querySelector('.next').addEventListener('click', function () { show(at + 1); });
  doc.addEventListener('keydown', function (e) {
    if (box.hidden) return;
    var typing = e.target.closest && e.target.closest('.note');
    if (e.key === 'Escape') { if (point || typing) commenting(true); else close(); }
    else if (typing) return;
    else if (e.key === 'ArrowLeft') show(at - 1);
    else if (e.key === 'ArrowRight') show(at + 1);
  });
  var startX = null;
  box.addEventListener('touchstart', function (e) {
    startX = e.target.closest && e.target.closest('.note') ? null : e.touches[0].clientX;
  }, { passive: true });
  box.addEventListener('touchend', function (e) {
    if (startX === null) return;
    var dx = e.changedTouches[0].clientX - startX; startX = null;
    if (Math.abs(dx) > 40) show(at + (dx < 0 ? 1 : -1));
  });
  wall.addEventListener('click', function (e) {
    var p = e.target.closest('a.ph');
    if (!p || e.ctrlKey || e.metaKey || e.shiftKey) return;
    e.preventDefault();
    if (doc.body.classList.contains('selecting')) {
      var name = p.dataset.name, k = picked.indexOf(name);
      if (k < 0) picked.push(name); else picked.splice(k, 1);
      p.classList.toggle('picked', k < 0);
      showPicked();
    } else {
      show(photos().indexOf(p));
    }
  });
})();

// Folders with an upload link, kept as the places "Share → DMV" offers.
(function () {
  var up = document.querySelector('a[href*="/upload/"]');
  var key = 'dmv-recent-folders', kept = [];
  try { kept = JSON.parse(localStorage.getItem(key) || '[]'); } catch (e) {}
  if (up && /\/tree\//.test(location.pathname)) {
    var h = up.getAttribute('href');
    kept = [{ href: h, label: decodeURIComponent(h.replace(/^\/([^/]+)\/upload\//, '$1: ')) }]
      .concat(kept.filter(function (k) { return k.href !== h; })).slice(0, 8);
    try { localStorage.setItem(key, JSON.stringify(kept)); } catch (e) {}
  }
  var recent = document.getElementById('recent');
  if (recent && kept.length) {
    recent.textContent = '';
    kept.forEach(function (k) {
      var li = document.createElement('li'), a = document.createElement('a');
      a.href = k.href + '?shared=1'; a.textContent = k.label;
      li.appendChild(a); recent.appendChild(li);
    });
  }
})();

// Comments: a moment of a film or a sound plays the page's player from
// there; on a picture's page a tap or a click places a point and a
// mouse's drag a rectangle, in the picture's own pixels (the data-w and
// data-h the server read from it), into the new comment's form.
(function () {
  var doc = document;
  doc.addEventListener('click', function (e) {
    var b = e.target.closest && e.target.closest('button.seek');
    var player = doc.querySelector('video, audio');
    if (!b || !player) return;
    player.currentTime = parseFloat(b.dataset.seconds) || 0;
    var playing = player.play && player.play();
    if (playing && playing.catch) playing.catch(function () {});
  });
  var form = doc.getElementById('new-comment');
  if (!form) return;
  var at = form.querySelector('input[name=at]'), text = form.querySelector('textarea');
  var now = form.querySelector('button.now'), player = doc.querySelector('video, audio');
  if (now && player) {
    now.hidden = false;
    now.addEventListener('click', function () { at.value = player.currentTime.toFixed(3); text.focus(); });
  }
  var marked = doc.querySelector('.marked[data-w]');
  if (!marked) return;
  var img = marked.querySelector('img'), W = +marked.dataset.w, H = +marked.dataset.h;
  var pending = doc.createElement('span');
  pending.className = 'pin pending'; pending.hidden = true;
  marked.appendChild(pending);
  function spot(e) {
    var r = img.getBoundingClientRect();
    var f = function (v, lo, size) { return Math.min(Math.max((v - lo) / size, 0), 1); };
    return { x: Math.round(f(e.clientX, r.left, r.width) * W), y: Math.round(f(e.clientY, r.top, r.height) * H), cx: e.clientX, cy: e.clientY };
  }
  function mark(a, b) {
    var x = Math.min(a.x, b.x), y = Math.min(a.y, b.y), w = Math.abs(a.x - b.x), h = Math.abs(a.y - b.y);
    var area = w > 0 || h > 0;
    pending.hidden = false;
    pending.classList.toggle('point', !area); pending.classList.toggle('area', area);
    pending.style.left = (x / W * 100) + '%'; pending.style.top = (y / H * 100) + '%';
    pending.style.width = area ? (w / W * 100) + '%' : '0'; pending.style.height = area ? (h / H * 100) + '%' : '0';
    at.value = area ? [x, y, w, h].join(',') : x + ',' + y;
  }
  var start = null, dragged = false;
  img.addEventListener('pointerdown', function (e) {
    if (e.pointerType !== 'mouse' || e.button !== 0) return;
    start = spot(e); dragged = false; e.preventDefault();
  });
  doc.addEventListener('pointermove', function (e) {
    if (!start) return;
    var p = spot(e);
    if (Math.abs(p.cx - start.cx) + Math.abs(p.cy - start.cy) > 8) { dragged = true; mark(start, p); }
  });
  doc.addEventListener('pointerup', function (e) {
    if (!start) return;
    if (dragged) { mark(start, spot(e)); text.focus({ preventScroll: true }); }
    start = null;
  });
  // The picture links to the original: while commenting, a tap marks instead.
  img.addEventListener('click', function (e) {
    e.preventDefault();
    if (dragged) { dragged = false; return; }
    var p = spot(e);
    mark(p, p);
    text.focus({ preventScroll: true });
  });
})();
