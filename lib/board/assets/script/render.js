// Rendering a snapshot: the walk's status line, the error banner, the tables, and the focus kept across renders.

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

function focusKey(parts) {
  return JSON.stringify(parts);
}
