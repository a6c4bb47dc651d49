// Text: the only ways strings reach the page.

/**
 * Characters shown as a marker rather than as themselves: controls, format characters (bidi,
 * zero-width), line and paragraph separators, lone surrogates, private-use and unassigned code
 * points, and every default-ignorable one (variation selectors up to U+E01EF, Hangul fillers, the
 * soft hyphen, ...), which render as nothing and would make two names look alike. Tested one code
 * point at a time (for...of), so an astral one is one marker with its whole code point.
 */
var INVISIBLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\p{Co}\p{Cn}\p{Default_Ignorable_Code_Point}]/u;

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
