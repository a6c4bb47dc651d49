// The name filter: what was typed becomes the snapshot's `match`.

var FILTER_DEBOUNCE_MS = 300;

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
