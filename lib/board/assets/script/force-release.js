// Force release: the buttons on a holder, the confirmation dialog, and the request.

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
