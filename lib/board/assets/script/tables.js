// The tables of held locks, semaphores and live instances, and the named rows they share with the contention table.

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

/**
 * Fills `tbody` with a row per named item (`testId`, `data-name`, its name as the row's header,
 * then the cells `fill(tr, item)` adds), or with one row of `columns` that says `none` (and the
 * filter shown, if any).
 */
function namedRows(tbody, items, columns, none, testId, fill) {
  clear(tbody);
  if (items.length === 0) tbody.appendChild(emptyRow(columns, none + filterNote() + '.'));
  items.forEach(function (item) {
    var tr = el('tr');
    tr.setAttribute('data-testid', testId);
    tr.setAttribute('data-name', item.name);
    tr.appendChild(nameHeader(item.name));
    fill(tr, item);
    tbody.appendChild(tr);
  });
}

function renderLocks(snapshot) {
  namedRows(dom.locksBody, snapshot.locks || [], 7, 'No held locks', 'lock-row', function (tr, lock) {
    var serverTime = typeof lock.serverTime === 'number' ? lock.serverTime : snapshot.serverTime;
    tr.appendChild(el('td', null, el('span', 'badge kind-' + lock.kind, lock.kind)));
    tr.appendChild(el('td', null, lock.mode ? el('span', 'badge mode-' + (lock.mode === 'write' ? 'write' : 'read'), lock.mode) : el('span', 'muted', '\u2014')));
    tr.appendChild(el('td', 'holders-cell', holdersList(lock, serverTime, snapshot.forceRelease === true)));
    tr.appendChild(ttlCell(lock.ttl));
    var token = el('td', 'num');
    token.setAttribute('data-testid', 'fencing-token');
    token.appendChild(typeof lock.fencingToken === 'number' ? el('span', null, String(lock.fencingToken)) : el('span', 'muted', '\u2014'));
    tr.appendChild(token);
    tr.appendChild(el('td', 'waiters-cell', waitersList(lock)));
  });
}

function renderSemaphores(snapshot) {
  namedRows(dom.semaphoresBody, snapshot.semaphores || [], 5, 'No semaphore in use', 'semaphore-row', function (tr, semaphore) {
    var serverTime = typeof semaphore.serverTime === 'number' ? semaphore.serverTime : snapshot.serverTime;
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
