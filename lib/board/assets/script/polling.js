// Polling: one snapshot request at a time, the next one refreshMs after it ends.

var sequence = 0;
var inFlight = null;
var timer = null;

function schedule() {
  clearTimeout(timer);
  timer = setTimeout(refresh, state.refreshMs);
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
