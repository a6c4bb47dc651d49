/*
 * The lock board's page: plain browser JavaScript, no build step, no dependency. It polls
 * `api/snapshot` (relative to this script's own URL, so any global prefix or proxy path works) and
 * renders the snapshot with DOM APIs only. Every string that comes from Redis (lock names, owner
 * ids, client names, hosts) is TEXT: it reaches the page through text nodes, never as markup, and
 * control, format, zero-width and other invisible characters are shown as visible markers
 * (⟨U+200B⟩, ⟨U+E0100⟩).
 *
 * Times: the server's numbers are on the Redis server's clock. The page never compares them with
 * the browser's clock: a countdown is the server's value minus the time elapsed (performance.now())
 * since the response arrived.
 */
(function () {
  'use strict';

  // Captured at load: document.currentScript is null once the script has run.
  var currentScript = document.currentScript;
  var scriptUrl = currentScript && currentScript.src ? currentScript.src : findScriptUrl();
  var SNAPSHOT_URL = new URL('api/snapshot', scriptUrl);
  var RELEASE_URL = new URL('api/force-release', scriptUrl);
  var SVG_NS = 'http://www.w3.org/2000/svg';
  var DEFAULT_REFRESH_MS = 2000;
  var FILTER_DEBOUNCE_MS = 300;
  var TICK_MS = 200;

  /**
   * Characters shown as a marker rather than as themselves: controls, format characters (bidi,
   * zero-width), line and paragraph separators, lone surrogates, private-use and unassigned code
   * points, and every default-ignorable one (variation selectors up to U+E01EF, Hangul fillers, the
   * soft hyphen, ...), which render as nothing and would make two names look alike. Tested one code
   * point at a time (for...of), so an astral one is one marker with its whole code point.
   */
  var INVISIBLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\p{Co}\p{Cn}\p{Default_Ignorable_Code_Point}]/u;

  function findScriptUrl() {
    var scripts = document.getElementsByTagName('script');
    for (var i = scripts.length - 1; i >= 0; i--) {
      if (/board\.js(?:[?#].*)?$/.test(scripts[i].src)) return scripts[i].src;
    }
    return document.baseURI;
  }

  // ---------------------------------------------------------------------------------------------
  // Text: the only ways strings reach the page.

  function codePointLabel(ch) {
    var hex = ch.codePointAt(0).toString(16).toUpperCase();
    while (hex.length < 4) hex = '0' + hex;
    return 'U+' + hex;
  }

  /** Appends `value` to `parent` as text, each invisible character as a styled ⟨U+XXXX⟩ marker. */
  function appendText(parent, value) {
    var text = String(value);
    var run = '';
    for (var ch of text) {
      if (INVISIBLE.test(ch)) {
        if (run) parent.appendChild(document.createTextNode(run));
        run = '';
        var label = codePointLabel(ch);
        var mark = document.createElement('span');
        mark.className = 'cc-mark';
        mark.title = 'invisible or control character ' + label;
        mark.appendChild(document.createTextNode('\u27E8'));
        var cc = document.createElement('span');
        cc.className = 'cc';
        cc.textContent = label;
        mark.appendChild(cc);
        mark.appendChild(document.createTextNode('\u27E9'));
        parent.appendChild(mark);
      } else {
        run += ch;
      }
    }
    if (run) parent.appendChild(document.createTextNode(run));
    return parent;
  }

  /** `value` as a plain string with the same markers: for attributes (aria-label, title). */
  function visibleString(value) {
    var out = '';
    for (var ch of String(value)) out += INVISIBLE.test(ch) ? '\u27E8' + codePointLabel(ch) + '\u27E9' : ch;
    return out;
  }

  /** An element with a class and text content (any number of text pieces or nodes). */
  function el(tag, className) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    for (var i = 2; i < arguments.length; i++) {
      var part = arguments[i];
      if (part === undefined || part === null) continue;
      if (typeof part === 'object' && part.nodeType) node.appendChild(part);
      else node.appendChild(document.createTextNode(String(part)));
    }
    return node;
  }

  /** A span holding a string from Redis, shown safely. */
  function nameNode(value, className) {
    return appendText(el('span', className || 'name'), value);
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
  }

  // ---------------------------------------------------------------------------------------------
  // Formatting.

  function pad2(n) {
    return n < 10 ? '0' + n : String(n);
  }

  function formatDuration(ms) {
    if (!(ms > 0)) ms = 0;
    if (ms < 60000) return (ms / 1000).toFixed(1) + ' s';
    var s = Math.floor(ms / 1000);
    var m = Math.floor(s / 60);
    s %= 60;
    if (m < 60) return m + ' min ' + pad2(s) + ' s';
    var h = Math.floor(m / 60);
    m %= 60;
    if (h < 24) return h + ' h ' + pad2(m) + ' min';
    var d = Math.floor(h / 24);
    return d + ' d ' + (h % 24) + ' h';
  }

  /** A total wait: whole ms under a second, else as a duration. */
  function formatWait(ms) {
    if (!(ms > 0)) return '0 ms';
    return ms < 1000 ? Math.round(ms) + ' ms' : formatDuration(ms);
  }

  function formatCount(n) {
    return Number(n || 0).toLocaleString('en-US');
  }

  function formatServerTime(ms) {
    var date = new Date(ms);
    return isNaN(date.getTime()) ? String(ms) : date.toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
  }

  // ---------------------------------------------------------------------------------------------
  // Live countdowns between polls.

  var receivedAt = performance.now();
  var tickers = [];

  /** A span whose text is `base - elapsed` (direction -1: a TTL) or `base + elapsed` (+1: an age). */
  function liveDuration(base, direction, testId) {
    var span = el('span', 'live');
    if (testId) span.setAttribute('data-testid', testId);
    var ticker = { node: span, base: base, direction: direction, shown: '' };
    tickers.push(ticker);
    updateTicker(ticker, performance.now() - receivedAt);
    return span;
  }

  function updateTicker(ticker, elapsed) {
    var value = ticker.base + ticker.direction * elapsed;
    var text = ticker.direction < 0 && value <= 0 ? 'expiring' : formatDuration(value);
    if (text !== ticker.shown) {
      ticker.shown = text;
      ticker.node.textContent = text;
    }
  }

  function tick() {
    var elapsed = performance.now() - receivedAt;
    for (var i = 0; i < tickers.length; i++) updateTicker(tickers[i], elapsed);
  }

  /** The TTL cell of a lock: -1 no expiry, -2 free, else a live countdown. */
  function ttlCell(ttl) {
    var td = el('td', 'num ttl');
    if (typeof ttl !== 'number' || ttl === -1) {
      var none = el('span', 'muted', 'no expiry');
      none.setAttribute('data-testid', 'ttl');
      td.appendChild(none);
    } else if (ttl < 0) {
      var free = el('span', 'muted', 'free');
      free.setAttribute('data-testid', 'ttl');
      td.appendChild(free);
    } else {
      td.appendChild(liveDuration(ttl, -1, 'ttl'));
    }
    return td;
  }

  // ---------------------------------------------------------------------------------------------
  // Rendering.

  var state = {
    snapshot: null,
    match: null,
    refreshMs: DEFAULT_REFRESH_MS,
    fetchError: null,
  };

  var dom = {};

  function instanceText(instance) {
    if (!instance) return null;
    var span = el('span', 'instance');
    appendText(span, instance.host);
    span.appendChild(document.createTextNode(' \u00B7 pid ' + instance.pid));
    if (instance.clientName) {
      span.appendChild(document.createTextNode(' \u00B7 '));
      appendText(span, instance.clientName);
    }
    return span;
  }

  function ownerNode(ownerId) {
    return appendText(el('code', 'owner'), ownerId);
  }

  /** The holders that a force release may target, with the token and owner the server checks. */
  function releaseTargets(lock) {
    var targets = [];
    var holders = lock.holders || [];
    if (lock.kind === 'semaphore') {
      holders.forEach(function (holder, index) {
        if (typeof holder.fencingToken === 'number') targets.push({ index: index, fencingToken: holder.fencingToken, ownerId: holder.ownerId });
      });
    } else if (typeof lock.fencingToken === 'number') {
      if (lock.kind === 'read-write') {
        if (lock.mode !== 'write') return targets;
        var writers = holders.filter(function (holder) { return holder.mode === 'write'; });
        holders.forEach(function (holder, index) {
          if (holder.mode === 'write' || (writers.length === 0 && holder.mode !== 'read')) {
            targets.push({ index: index, fencingToken: lock.fencingToken, ownerId: holder.ownerId });
          }
        });
      } else {
        holders.forEach(function (holder, index) {
          targets.push({ index: index, fencingToken: lock.fencingToken, ownerId: holder.ownerId });
        });
      }
    }
    return targets;
  }

  function focusKey(parts) {
    return JSON.stringify(parts);
  }

  function releaseButton(lock, holder, target) {
    var button = el('button', 'danger small', 'Force release');
    button.type = 'button';
    button.setAttribute('data-testid', 'force-release');
    button.setAttribute('data-focus-key', focusKey(['release', lock.kind, lock.name, target.ownerId, target.fencingToken]));
    button.setAttribute(
      'aria-label',
      'Force release ' + visibleString(lock.name) + ' held by ' + visibleString(holder.ownerId) + ' with token ' + target.fencingToken,
    );
    button.addEventListener('click', function () {
      askRelease({
        name: lock.name,
        kind: lock.kind,
        fencingToken: target.fencingToken,
        ownerId: target.ownerId,
        instance: holder.instance,
        focusKey: button.getAttribute('data-focus-key'),
      });
    });
    return button;
  }

  function holdersList(lock, serverTime, canRelease) {
    var holders = lock.holders || [];
    if (holders.length === 0) return el('span', 'muted', 'none');
    var targets = canRelease ? releaseTargets(lock) : [];
    var list = el('ul', 'holders');
    holders.forEach(function (holder, index) {
      var item = el('li', 'holder');
      item.setAttribute('data-testid', 'holder');
      item.appendChild(ownerNode(holder.ownerId));
      var meta = el('span', 'meta');
      var instance = instanceText(holder.instance);
      if (instance) meta.appendChild(instance);
      else meta.appendChild(el('span', 'muted', 'instance not registered'));
      if (holder.mode) meta.appendChild(el('span', 'badge mode-' + (holder.mode === 'write' ? 'write' : 'read'), holder.mode));
      if (lock.kind === 'semaphore') {
        meta.appendChild(el('span', 'fact', holder.holdCount + (holder.holdCount === 1 ? ' permit' : ' permits')));
        if (typeof holder.fencingToken === 'number') meta.appendChild(el('span', 'fact', 'token ' + holder.fencingToken));
      } else {
        meta.appendChild(el('span', 'fact', 'hold count ' + holder.holdCount));
      }
      if (typeof holder.heldSince === 'number' && typeof serverTime === 'number') {
        var since = el('span', 'fact', 'held ', liveDuration(serverTime - holder.heldSince, 1, 'held-for'));
        since.title = 'held since ' + formatServerTime(holder.heldSince) + ' (server clock)';
        meta.appendChild(since);
      }
      item.appendChild(meta);
      targets
        .filter(function (target) { return target.index === index; })
        .forEach(function (target) { item.appendChild(releaseButton(lock, holder, target)); });
      list.appendChild(item);
    });
    return list;
  }

  function waitersList(lock) {
    var waiters = lock.waiters || [];
    // The board lists the first waiters of a long line; waiterCount says how many wait in all.
    var more = typeof lock.waiterCount === 'number' ? Math.max(0, lock.waiterCount - waiters.length) : 0;
    if (waiters.length === 0 && more === 0) return el('span', 'muted', 'none');
    var shown = document.createDocumentFragment();
    var list = el('ol', 'waiters');
    waiters.forEach(function (waiter) {
      var item = el('li', 'waiter');
      item.setAttribute('data-testid', 'waiter');
      item.appendChild(ownerNode(waiter.ownerId));
      var instance = instanceText(waiter.instance);
      if (instance) item.appendChild(el('span', 'meta', instance));
      if (typeof waiter.permits === 'number') {
        item.appendChild(el('span', 'fact', 'asks ' + waiter.permits + (waiter.permits === 1 ? ' permit' : ' permits')));
      }
      list.appendChild(item);
    });
    if (waiters.length > 0) shown.appendChild(list);
    if (more > 0) {
      var rest = el('p', 'more-waiters muted', (waiters.length > 0 ? '\u2026 and ' : '') + formatCount(more) + (waiters.length > 0 ? ' more' : '') + ' waiting');
      rest.setAttribute('data-testid', 'more-waiters');
      shown.appendChild(rest);
    }
    return shown;
  }

  function nameHeader(name) {
    var th = el('th', 'name-cell');
    th.scope = 'row';
    th.appendChild(nameNode(name));
    return th;
  }

  function emptyRow(columns, text) {
    var tr = el('tr', 'empty');
    var td = el('td', 'muted', text);
    td.colSpan = columns;
    tr.appendChild(td);
    return tr;
  }

  function filterNote() {
    return state.snapshot && state.snapshot.match ? ' matching ' + visibleString(state.snapshot.match) : '';
  }

  function renderLocks(snapshot) {
    var tbody = dom.locksBody;
    clear(tbody);
    var locks = snapshot.locks || [];
    if (locks.length === 0) tbody.appendChild(emptyRow(7, 'No held locks' + filterNote() + '.'));
    locks.forEach(function (lock) {
      var serverTime = typeof lock.serverTime === 'number' ? lock.serverTime : snapshot.serverTime;
      var tr = el('tr');
      tr.setAttribute('data-testid', 'lock-row');
      tr.setAttribute('data-name', lock.name);
      tr.appendChild(nameHeader(lock.name));
      tr.appendChild(el('td', null, el('span', 'badge kind-' + lock.kind, lock.kind)));
      tr.appendChild(el('td', null, lock.mode ? el('span', 'badge mode-' + (lock.mode === 'write' ? 'write' : 'read'), lock.mode) : el('span', 'muted', '\u2014')));
      tr.appendChild(el('td', 'holders-cell', holdersList(lock, serverTime, snapshot.forceRelease === true)));
      tr.appendChild(ttlCell(lock.ttl));
      var token = el('td', 'num');
      token.setAttribute('data-testid', 'fencing-token');
      token.appendChild(typeof lock.fencingToken === 'number' ? el('span', null, String(lock.fencingToken)) : el('span', 'muted', '\u2014'));
      tr.appendChild(token);
      tr.appendChild(el('td', 'waiters-cell', waitersList(lock)));
      tbody.appendChild(tr);
    });
  }

  function renderSemaphores(snapshot) {
    var tbody = dom.semaphoresBody;
    clear(tbody);
    var semaphores = snapshot.semaphores || [];
    if (semaphores.length === 0) tbody.appendChild(emptyRow(5, 'No semaphore in use' + filterNote() + '.'));
    semaphores.forEach(function (semaphore) {
      var serverTime = typeof semaphore.serverTime === 'number' ? semaphore.serverTime : snapshot.serverTime;
      var tr = el('tr');
      tr.setAttribute('data-testid', 'semaphore-row');
      tr.setAttribute('data-name', semaphore.name);
      tr.appendChild(nameHeader(semaphore.name));
      var permitsCell = el('td', 'permits');
      permitsCell.setAttribute('data-testid', 'permits');
      var total = semaphore.permits;
      var used;
      if (typeof total === 'number' && typeof semaphore.available === 'number') used = total - semaphore.available;
      else used = (semaphore.holders || []).reduce(function (sum, holder) { return sum + (holder.holdCount || 0); }, 0);
      if (typeof total === 'number') {
        permitsCell.appendChild(el('span', 'permits-text', used + ' of ' + total + ' used'));
        var meter = document.createElement('meter');
        meter.min = 0;
        meter.max = Math.max(total, 1);
        meter.value = Math.min(Math.max(used, 0), meter.max);
        meter.setAttribute('aria-label', 'permits used of ' + visibleString(semaphore.name));
        permitsCell.appendChild(meter);
      } else {
        permitsCell.appendChild(el('span', 'permits-text', used + ' used'));
      }
      tr.appendChild(permitsCell);
      tr.appendChild(el('td', 'holders-cell', holdersList(semaphore, serverTime, snapshot.forceRelease === true)));
      tr.appendChild(ttlCell(semaphore.ttl));
      tr.appendChild(el('td', 'waiters-cell', waitersList(semaphore)));
      tbody.appendChild(tr);
    });
  }

  function renderInstances(snapshot) {
    var tbody = dom.instancesBody;
    clear(tbody);
    var instances = snapshot.instances || [];
    if (instances.length === 0) tbody.appendChild(emptyRow(6, 'No live instance.'));
    instances.forEach(function (instance) {
      var tr = el('tr');
      tr.setAttribute('data-testid', 'instance-row');
      var th = el('th');
      th.scope = 'row';
      th.appendChild(instance.clientName ? nameNode(instance.clientName) : el('span', 'muted', '(no name)'));
      tr.appendChild(th);
      tr.appendChild(el('td', null, nameNode(instance.host, 'host')));
      tr.appendChild(el('td', 'num', String(instance.pid)));
      tr.appendChild(el('td', null, appendText(el('code', 'owner'), instance.clientId)));
      var started = el('td');
      var time = document.createElement('time');
      appendText(time, instance.startedAt);
      if (!isNaN(Date.parse(instance.startedAt))) time.dateTime = instance.startedAt;
      started.appendChild(time);
      tr.appendChild(started);
      // Up for: since the instance started (its own clock then, the server's now), counting up.
      var up = el('td', 'num');
      var startedMs = Date.parse(instance.startedAt);
      if (!isNaN(startedMs) && typeof snapshot.serverTime === 'number') {
        up.appendChild(liveDuration(Math.max(0, snapshot.serverTime - startedMs), 1, 'up-for'));
      } else {
        up.appendChild(el('span', 'muted', '\u2014'));
      }
      tr.appendChild(up);
      tbody.appendChild(tr);
    });
    if (snapshot.instancesMore) {
      var more = emptyRow(6, 'More instances are alive than are listed here.');
      more.className = 'more';
      tbody.appendChild(more);
    }
  }

  var METRICS = [
    { key: 'waits', label: 'waits', format: formatCount },
    { key: 'waitMs', label: 'wait time', format: formatWait },
    { key: 'timeouts', label: 'timeouts', format: formatCount },
    { key: 'skips', label: 'skips', format: formatCount },
  ];

  /** A small line chart of `values` (oldest first), drawn with SVG DOM calls, labelled for assistive tech. */
  function sparkline(values, label) {
    var width = 96;
    var height = 24;
    var inset = 2;
    var svg = document.createElementNS(SVG_NS, 'svg');
    svg.setAttribute('class', 'spark');
    svg.setAttribute('viewBox', '0 0 ' + width + ' ' + height);
    svg.setAttribute('width', String(width));
    svg.setAttribute('height', String(height));
    svg.setAttribute('role', 'img');
    svg.setAttribute('aria-label', label);
    svg.setAttribute('focusable', 'false');
    var baseline = document.createElementNS(SVG_NS, 'line');
    baseline.setAttribute('class', 'spark-base');
    baseline.setAttribute('x1', String(inset));
    baseline.setAttribute('x2', String(width - inset));
    baseline.setAttribute('y1', String(height - inset));
    baseline.setAttribute('y2', String(height - inset));
    svg.appendChild(baseline);
    if (values.length > 0) {
      var max = Math.max.apply(null, values.concat([0]));
      var step = values.length > 1 ? (width - 2 * inset) / (values.length - 1) : 0;
      var points = values.map(function (value, i) {
        var x = values.length > 1 ? inset + i * step : width / 2;
        var y = height - inset - (max > 0 ? (value / max) * (height - 2 * inset) : 0);
        return [Math.round(x * 10) / 10, Math.round(y * 10) / 10];
      });
      var line = document.createElementNS(SVG_NS, 'polyline');
      line.setAttribute('class', 'spark-line');
      line.setAttribute('points', points.map(function (p) { return p[0] + ',' + p[1]; }).join(' '));
      svg.appendChild(line);
      var last = points[points.length - 1];
      var dot = document.createElementNS(SVG_NS, 'circle');
      dot.setAttribute('class', 'spark-dot');
      dot.setAttribute('cx', String(last[0]));
      dot.setAttribute('cy', String(last[1]));
      dot.setAttribute('r', '2');
      svg.appendChild(dot);
    }
    return svg;
  }

  function renderContention(snapshot) {
    var tbody = dom.contentionBody;
    clear(tbody);
    var rows = snapshot.contention || [];
    if (rows.length === 0) tbody.appendChild(emptyRow(5, 'No contention recorded' + filterNote() + '.'));
    rows.forEach(function (row) {
      var tr = el('tr');
      tr.setAttribute('data-testid', 'contention-row');
      tr.setAttribute('data-name', row.name);
      tr.appendChild(nameHeader(row.name));
      var points = row.points || [];
      METRICS.forEach(function (metric) {
        var values = points.map(function (point) { return Number(point[metric.key]) || 0; });
        var total = row.totals && typeof row.totals[metric.key] === 'number'
          ? row.totals[metric.key]
          : values.reduce(function (a, b) { return a + b; }, 0);
        var peak = Math.max.apply(null, values.concat([0]));
        var latest = values.length ? values[values.length - 1] : 0;
        var label = metric.label + ' for ' + visibleString(row.name) + ': ' + metric.format(total) + ' in total over ' + values.length +
          (values.length === 1 ? ' interval' : ' intervals') + ', peak ' + metric.format(peak) + ', latest ' + metric.format(latest);
        var td = el('td', 'metric');
        td.setAttribute('data-metric', metric.key);
        td.appendChild(sparkline(values, label));
        var totalNode = el('span', 'metric-total', metric.format(total));
        totalNode.setAttribute('aria-hidden', 'true');
        td.appendChild(totalNode);
        tr.appendChild(td);
      });
      tbody.appendChild(tr);
    });
  }

  function renderWalk(snapshot) {
    var node = dom.walkStatus;
    clear(node);
    var walk = snapshot.walk || {};
    var partial = walk.complete === false || walk.truncated === true;
    node.classList.toggle('partial', partial);
    if (partial) {
      node.appendChild(el('strong', null, 'partial: '));
      if (typeof walk.message === 'string' && walk.message !== '') {
        // The server's own words (without a leading "Partial view:", which the marker says already).
        var message = walk.message.replace(/^\s*partial(?: view)?\s*:\s*/i, '').trim();
        appendText(node, /[.!?]$/.test(message) ? message : message + '.');
      } else {
        var parts = [];
        if (walk.complete === false) parts.push('walked ' + formatCount(walk.keysScanned) + ' keys this refresh; a lock not reached yet shows when the walk reaches it');
        if (walk.truncated) {
          var limit = walk.budget && walk.budget.locksPerRefresh;
          parts.push('more locks matched than ' + (limit ? formatCount(limit) : 'the budget') + ': not all are shown');
        }
        appendText(node, parts.join('; ') + '.');
      }
    } else {
      node.appendChild(document.createTextNode(
        'Complete: walked all ' + formatCount(walk.keysScanned) + (walk.keysScanned === 1 ? ' key' : ' keys') + ' in Redis, inspected ' +
          formatCount(walk.locksInspected) + (walk.locksInspected === 1 ? ' lock.' : ' locks.'),
      ));
    }
    if (snapshot.match) {
      node.appendChild(document.createTextNode(' Filter: '));
      node.appendChild(nameNode(snapshot.match, 'name filter-shown'));
      node.appendChild(document.createTextNode('.'));
    }
    if (typeof snapshot.serverTime === 'number') {
      node.appendChild(document.createTextNode(' Server time ' + formatServerTime(snapshot.serverTime) + '.'));
    }
  }

  function renderBanner() {
    var banner = dom.errorBanner;
    clear(banner);
    var messages = [];
    if (state.fetchError) messages.push(state.fetchError);
    // The server's words: Redis could not be read, and the view shown is the last good one.
    if (state.snapshot && state.snapshot.error) messages.push(String(state.snapshot.error));
    if (messages.length === 0) {
      banner.hidden = true;
      return;
    }
    appendText(banner, messages.join(' \u2014 '));
    banner.hidden = false;
  }

  function render(snapshot) {
    var active = document.activeElement;
    var key = active && active.getAttribute ? active.getAttribute('data-focus-key') : null;
    tickers = [];
    renderWalk(snapshot);
    renderLocks(snapshot);
    renderSemaphores(snapshot);
    renderContention(snapshot);
    renderInstances(snapshot);
    renderBanner();
    if (key) restoreFocus(key);
  }

  function restoreFocus(key) {
    if (!key) return;
    var candidates = document.querySelectorAll('[data-focus-key]');
    for (var i = 0; i < candidates.length; i++) {
      if (candidates[i].getAttribute('data-focus-key') === key) {
        candidates[i].focus();
        return;
      }
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Polling.

  var sequence = 0;
  var inFlight = null;
  var timer = null;

  function schedule() {
    clearTimeout(timer);
    timer = setTimeout(refresh, state.refreshMs);
  }

  function showFilterError(message) {
    var node = dom.filterError;
    clear(node);
    if (message) {
      appendText(node, message);
      node.hidden = false;
      dom.filter.setAttribute('aria-invalid', 'true');
    } else {
      node.hidden = true;
      dom.filter.removeAttribute('aria-invalid');
    }
  }

  async function readJson(response) {
    try {
      return await response.json();
    } catch (error) {
      return null;
    }
  }

  function describeFailure(response, body) {
    var text = 'HTTP ' + response.status + (response.statusText ? ' ' + response.statusText : '');
    if (body && typeof body.message === 'string') text += ': ' + body.message;
    else if (body && Array.isArray(body.message)) text += ': ' + body.message.join('; ');
    return text;
  }

  async function refresh() {
    clearTimeout(timer);
    // A hidden tab does not poll; it refreshes when it shows again (visibilitychange).
    if (document.hidden && state.snapshot) {
      schedule();
      return;
    }
    if (inFlight) inFlight.abort();
    var mine = ++sequence;
    var controller = new AbortController();
    inFlight = controller;
    var url = new URL(SNAPSHOT_URL.href);
    if (state.match) url.searchParams.set('match', state.match);
    try {
      var response = await fetch(url.href, {
        headers: { Accept: 'application/json' },
        credentials: 'same-origin',
        cache: 'no-store',
        signal: controller.signal,
      });
      var arrived = performance.now();
      var body = await readJson(response);
      if (mine !== sequence) return;
      if (response.ok && body && typeof body === 'object') {
        receivedAt = arrived;
        state.snapshot = body;
        state.fetchError = null;
        if (typeof body.refreshMs === 'number' && body.refreshMs >= 250) state.refreshMs = body.refreshMs;
        showFilterError(null);
        render(body);
      } else if (response.status === 400 && state.match) {
        showFilterError('Filter refused: ' + describeFailure(response, body));
      } else {
        state.fetchError = 'Could not load the snapshot (' + describeFailure(response, body) + ')' + (state.snapshot ? '; showing the last data received' : '');
        renderBanner();
      }
    } catch (error) {
      if (error && error.name === 'AbortError') return;
      if (mine !== sequence) return;
      state.fetchError = 'Could not reach the board (' + (error && error.message ? error.message : 'network error') + ')' + (state.snapshot ? '; showing the last data received' : '');
      renderBanner();
    } finally {
      if (mine === sequence) {
        inFlight = null;
        schedule();
      }
    }
  }

  /** The `match` for what was typed: plain text matches names containing it; `*`, `?`, `[` make it a glob as is. */
  function toMatch(text) {
    if (text === '') return null;
    return /[*?[]/.test(text) ? text : '*' + text + '*';
  }

  var filterTimer = null;

  function onFilterInput() {
    clearTimeout(filterTimer);
    filterTimer = setTimeout(applyFilter, FILTER_DEBOUNCE_MS);
  }

  function applyFilter() {
    clearTimeout(filterTimer);
    var match = toMatch(dom.filter.value);
    if (match === state.match) return;
    state.match = match;
    refresh();
  }

  // ---------------------------------------------------------------------------------------------
  // Force release.

  var pending = null;
  var returnFocusKey = null;

  function setStatus(parts) {
    var node = dom.status;
    clear(node);
    parts.forEach(function (part) {
      if (part && typeof part === 'object' && part.nodeType) node.appendChild(part);
      else node.appendChild(document.createTextNode(String(part)));
    });
  }

  function askRelease(target) {
    pending = target;
    returnFocusKey = target.focusKey;
    var body = dom.confirmBody;
    clear(body);
    var list = el('dl', 'confirm-facts');
    list.appendChild(el('dt', null, 'Lock'));
    list.appendChild(el('dd', null, nameNode(target.name), ' ', el('span', 'badge kind-' + target.kind, target.kind)));
    list.appendChild(el('dt', null, 'Holder'));
    var holder = el('dd', null, ownerNode(target.ownerId));
    var instance = instanceText(target.instance);
    if (instance) holder.appendChild(el('span', 'meta', instance));
    list.appendChild(holder);
    list.appendChild(el('dt', null, 'Fencing token'));
    list.appendChild(el('dd', null, String(target.fencingToken)));
    body.appendChild(list);
    dom.dialog.showModal();
    dom.confirmCancel.focus();
  }

  function onDialogClose() {
    var key = returnFocusKey;
    pending = null;
    returnFocusKey = null;
    if (key) restoreFocus(key);
  }

  async function confirmRelease() {
    var target = pending;
    if (!target) return;
    pending = null;
    dom.dialog.close('confirm');
    setStatus(['Releasing ', nameNode(target.name), '\u2026']);
    try {
      var response = await fetch(RELEASE_URL.href, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-Lock-Board': '1', Accept: 'application/json' },
        body: JSON.stringify({ name: target.name, kind: target.kind, fencingToken: target.fencingToken, ownerId: target.ownerId }),
        credentials: 'same-origin',
        cache: 'no-store',
      });
      var body = await readJson(response);
      if (response.ok && body && body.released === true) {
        setStatus([nameNode(target.name), ': released (holder ', ownerNode(target.ownerId), ', token ' + target.fencingToken + ').']);
      } else if (response.status === 409) {
        setStatus([nameNode(target.name), ': refused: the holder no longer holds it with token ' + target.fencingToken + '.']);
      } else {
        setStatus([nameNode(target.name), ': force release failed: ', appendText(el('span'), describeFailure(response, body)), '.']);
      }
    } catch (error) {
      setStatus([nameNode(target.name), ': force release failed: ', appendText(el('span'), error && error.message ? error.message : 'network error'), '.']);
    }
    refresh();
  }

  // ---------------------------------------------------------------------------------------------
  // Start.

  function start() {
    dom.filter = document.getElementById('filter');
    dom.filterError = document.getElementById('filter-error');
    dom.walkStatus = document.getElementById('walk-status');
    dom.errorBanner = document.getElementById('error-banner');
    dom.status = document.getElementById('status');
    dom.locksBody = document.querySelector('#locks-table tbody');
    dom.semaphoresBody = document.querySelector('#semaphores-table tbody');
    dom.contentionBody = document.querySelector('#contention-table tbody');
    dom.instancesBody = document.querySelector('#instances-table tbody');
    dom.dialog = document.getElementById('confirm-dialog');
    dom.confirmBody = document.getElementById('confirm-body');
    dom.confirmOk = document.getElementById('confirm-ok');
    dom.confirmCancel = document.getElementById('confirm-cancel');

    dom.filter.addEventListener('input', onFilterInput);
    dom.filter.addEventListener('keydown', function (event) {
      if (event.key === 'Enter') applyFilter();
    });
    dom.confirmOk.addEventListener('click', confirmRelease);
    dom.confirmCancel.addEventListener('click', function () { dom.dialog.close('cancel'); });
    dom.dialog.addEventListener('close', onDialogClose);
    document.addEventListener('visibilitychange', function () {
      if (!document.hidden) refresh();
    });

    setInterval(tick, TICK_MS);
    refresh();
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
