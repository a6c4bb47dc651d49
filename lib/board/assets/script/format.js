// Formatting: durations, counts, the server's time, and the live countdowns between polls.

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

var TICK_MS = 200;

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
