// Start: find the page's elements, listen, poll. This part runs last.

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
