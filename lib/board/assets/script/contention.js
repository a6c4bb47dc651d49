// The contention table: a small chart per name and metric.

var SVG_NS = 'http://www.w3.org/2000/svg';

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
  namedRows(dom.contentionBody, snapshot.contention || [], 5, 'No contention recorded', 'contention-row', function (tr, row) {
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
  });
}
