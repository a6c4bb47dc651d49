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
 *
 * The script is served as one file, board.js: scripts/generate-board-assets.js joins the files of
 * this folder, in the order it lists (this one first, start.js last), inside one strict-mode
 * function, so they share one scope. This part: where the API is, and the page's shared state.
 */

// Captured at load: document.currentScript is null once the script has run.
var currentScript = document.currentScript;
var scriptUrl = currentScript && currentScript.src ? currentScript.src : findScriptUrl();
var SNAPSHOT_URL = new URL('api/snapshot', scriptUrl);
var RELEASE_URL = new URL('api/force-release', scriptUrl);
var DEFAULT_REFRESH_MS = 2000;

function findScriptUrl() {
  var scripts = document.getElementsByTagName('script');
  for (var i = scripts.length - 1; i >= 0; i--) {
    if (/board\.js(?:[?#].*)?$/.test(scripts[i].src)) return scripts[i].src;
  }
  return document.baseURI;
}

// What the page knows: the last snapshot shown, the filter asked for, the poll interval, the last failure.
var state = {
  snapshot: null,
  match: null,
  refreshMs: DEFAULT_REFRESH_MS,
  fetchError: null,
};

// The page's elements, found once at start (start.js).
var dom = {};
