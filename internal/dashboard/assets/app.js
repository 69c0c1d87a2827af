// lockworker dashboard. Plain script, no build step. Every value from the
// server reaches the DOM as text (textContent, text nodes, setAttribute),
// never as markup: the page's Content-Security-Policy forbids inline script
// and this file never parses data as HTML.
'use strict';

(() => {
  const TOKEN_KEY = 'lockworker.adminToken';
  const SVG_NS = 'http://www.w3.org/2000/svg';
  const RECENT = 3; // transitions marked on the chart
  const REASONS = {
    released: 'released',
    lease_expired: 'lease expired',
    stepped_down: 'stepped down',
    fenced: 'fenced',
  };

  const $ = (id) => document.getElementById(id);
  let snap = null;          // the latest snapshot
  let actionsOn = false;    // the server has an admin token
  let token = sessionStorage.getItem(TOKEN_KEY) || '';
  let admin = false;        // token checked by the server
  let confirming = '';      // the action waiting for its second click
  let confirmTimer = 0;
  const busy = new Set();   // actions in flight

  // el builds an element; strings among kids become text nodes.
  function el(tag, props, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = v;
      else if (k === 'onclick') e.addEventListener('click', v);
      else e.setAttribute(k, v === true ? '' : String(v));
    }
    for (const kid of kids) {
      if (kid !== undefined && kid !== null && kid !== false) e.append(kid);
    }
    return e;
  }

  // swap replaces parent's children only when they changed (relative times
  // aside, tickTimes keeps those): a snapshot that changes nothing there must
  // not take a button from under a click that is landing on it.
  function swap(parent, ...kids) {
    const old = parent.children;
    if (old.length === kids.length && kids.every((k, i) => sig(k) === sig(old[i]))) return;
    parent.replaceChildren(...kids);
  }

  function sig(n) {
    const c = n.cloneNode(true);
    for (const r of c.querySelectorAll('.rel')) r.textContent = '';
    return new XMLSerializer().serializeToString(c); // compared only, never parsed back
  }

  function svgEl(tag, attrs) {
    const e = document.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    return e;
  }

  // Time

  function parseTime(s) {
    if (!s) return null;
    const d = new Date(s);
    return isNaN(d) || d.getFullYear() < 2000 ? null : d;
  }

  function ago(d) {
    if (!d) return '—';
    let s = Math.max(0, Math.round((Date.now() - d.getTime()) / 1000));
    if (s < 60) return s + 's ago';
    const m = Math.floor(s / 60); s %= 60;
    if (m < 60) return m + 'm ' + s + 's ago';
    const h = Math.floor(m / 60);
    if (h < 48) return h + 'h ' + (m % 60) + 'm ago';
    return Math.floor(h / 24) + 'd ago';
  }

  function clock(d) {
    return d ? d.toLocaleTimeString([], { hour12: false }) : '—';
  }

  // rel is a span that keeps saying how long ago d was.
  // With bare, it says only the duration ("6m 12s", not "6m 12s ago").
  function rel(d, bare) {
    const span = el('span', { class: 'rel', title: d ? d.toLocaleString() : '' }, since(d, bare));
    if (d) span.dataset.ts = String(d.getTime());
    if (bare) span.dataset.bare = '1';
    return span;
  }

  function since(d, bare) {
    const s = ago(d);
    return bare ? s.replace(/ ago$/, '') : s;
  }

  function tickTimes() {
    for (const s of document.querySelectorAll('.rel[data-ts]')) {
      s.textContent = since(new Date(Number(s.dataset.ts)), s.dataset.bare === '1');
    }
    for (const s of document.querySelectorAll('.until[data-ts]')) {
      s.textContent = until(new Date(Number(s.dataset.ts)));
    }
  }

  const fmtInt = (n) => (typeof n === 'number' ? n.toLocaleString('en-US') : '—');

  // fmtMs says a wait in milliseconds: "850ms", "12.3s", "4m 5s", "2h 3m".
  function fmtMs(ms) {
    if (ms < 1000) return ms + 'ms';
    if (ms < 60000) return (ms / 1000).toFixed(1) + 's';
    const m = Math.floor(ms / 60000);
    return m < 60 ? m + 'm ' + Math.floor(ms % 60000 / 1000) + 's' : Math.floor(m / 60) + 'h ' + (m % 60) + 'm';
  }

  // Connection

  function setConn(kind, text) {
    const c = $('conn');
    c.className = 'conn conn-' + kind;
    $('conn-text').textContent = text;
  }

  function banner(text) {
    const b = $('banner');
    b.textContent = text || '';
    b.hidden = !text;
  }

  let source = null;
  let retryMs = 2000;
  let poller = null;

  // While the server refuses the stream (too many), the page polls
  // api/snapshot: the same shared snapshot, so it costs the server nothing
  // more. A stream that opens again ends the polling.
  async function pollSnapshot() {
    try {
      snap = await fetchSnapshot();
      setConn('wait', 'Polling');
      banner('');
      render();
    } catch (e) {
      setConn('down', 'Disconnected');
    }
  }

  // fetchSnapshot reads the shared snapshot: with the admin token, the
  // view whose errors are in full; without it, errors by their class.
  async function fetchSnapshot() {
    const opts = { cache: 'no-store' };
    if (admin) opts.headers = { Authorization: 'Bearer ' + token };
    const res = await fetch('api/snapshot', opts);
    if (!res.ok) throw new Error('status ' + res.status);
    return res.json();
  }

  // show renders a snapshot the stream brought. The stream is anonymous
  // (an EventSource sends no header), so with the admin token the page
  // shows the admin view of the same snapshot instead, read at once.
  async function show(s) {
    if (admin) {
      try {
        s = await fetchSnapshot();
      } catch (e) {
        // the stream's view, errors by their class
      }
    }
    snap = s;
    render();
  }

  function connect() {
    source = new EventSource('events');
    source.addEventListener('open', () => {
      retryMs = 2000;
      clearInterval(poller);
      poller = null;
      setConn('live', 'Live');
    });
    source.addEventListener('snapshot', (ev) => {
      setConn('live', 'Live');
      banner('');
      show(JSON.parse(ev.data));
    });
    source.addEventListener('unavailable', () => {
      setConn('degraded', 'Source unavailable');
      banner(snap
        ? 'The data source is unavailable. Showing what it said at ' + clock(parseTime(snap.readAt)) + '.'
        : 'The data source is unavailable. Waiting for it…');
    });
    source.addEventListener('error', () => {
      // EventSource reconnects by itself unless the server refused the
      // stream outright; then try again later, backing off.
      if (source.readyState === EventSource.CLOSED) {
        setConn('down', 'Disconnected');
        source = null;
        if (!poller) {
          pollSnapshot();
          poller = setInterval(pollSnapshot, 5000);
        }
        setTimeout(connect, retryMs + Math.random() * 1000);
        retryMs = Math.min(retryMs * 2, 30000);
      } else {
        setConn('wait', 'Reconnecting…');
      }
    });
  }

  // Chart

  async function loadChart() {
    try {
      const res = await fetch('chart.svg');
      if (!res.ok) throw new Error('HTTP ' + res.status);
      const doc = new DOMParser().parseFromString(await res.text(), 'image/svg+xml');
      if (doc.querySelector('parsererror')) throw new Error('bad SVG');
      $('chart').replaceChildren(document.importNode(doc.documentElement, true));
      renderChart();
    } catch (e) {
      $('chart').replaceChildren(el('p', { class: 'empty', text: 'The state chart could not be loaded (' + e.message + ').' }));
    }
  }

  const q = (v) => CSS.escape(String(v));

  function renderChart() {
    const svg = $('chart').querySelector('svg');
    if (!svg || !snap) return;
    for (const n of svg.querySelectorAll('.current, .taken, .hot')) {
      n.classList.remove('current', 'taken', 'taken-0', 'taken-1', 'taken-2', 'hot');
    }
    for (const n of svg.querySelectorAll('.fleet-count')) n.remove();
    const self = snap.self || {};
    const cur = svg.querySelector('g.state[data-state="' + q(self.state) + '"]');
    if (cur) cur.classList.add('current');
    // Oldest first, so a newer use of the same arrow wins.
    const recent = (self.transitions || []).slice(-RECENT);
    recent.forEach((t, i) => {
      const age = recent.length - 1 - i;
      const g = svg.querySelector('g.edge[data-from="' + q(t.from) + '"][data-to="' + q(t.to) + '"]') ||
        svg.querySelector('g.bundle[data-to="' + q(t.to) + '"][data-trigger="' + q(t.trigger) + '"][data-from~="' + q(t.from) + '"]');
      if (!g) return;
      g.classList.remove('taken-0', 'taken-1', 'taken-2');
      g.classList.add('taken', 'taken-' + age);
      for (const txt of g.querySelectorAll('text[data-trigger="' + q(t.trigger) + '"]')) txt.classList.add('hot');
    });
    markFleet(svg);
  }

  // markFleet puts a count of replicas on each state that has any.
  function markFleet(svg) {
    const by = new Map();
    for (const r of snap.replicas || []) {
      if (!by.has(r.state)) by.set(r.state, []);
      by.get(r.state).push(r.workerId);
    }
    for (const [state, workers] of by) {
      const g = svg.querySelector('g.state[data-state="' + q(state) + '"]');
      const box = g && g.querySelector('rect');
      if (!box) continue;
      const x = Number(box.getAttribute('x')) + Number(box.getAttribute('width'));
      const y = Number(box.getAttribute('y'));
      const badge = svgEl('g', { class: 'fleet-count' });
      const title = svgEl('title');
      title.textContent = workers.join(', ');
      const text = svgEl('text', { x: x - 2, y: y + 2, 'text-anchor': 'middle', 'dominant-baseline': 'central' });
      text.textContent = String(workers.length);
      badge.append(title, svgEl('circle', { cx: x - 2, cy: y + 2, r: 9 }), text);
      g.append(badge);
    }
  }

  function renderRecent() {
    const items = ((snap.self || {}).transitions || []).slice(-RECENT).reverse();
    swap($('recent'), ...items.map((t, i) => {
      const at = parseTime(t.at);
      return el('li', { class: i === 0 ? 'newest' : '', title: at ? at.toLocaleString() : '' },
        t.from, el('span', { class: 'arrow', text: '→' }), t.to, ' · ' + t.trigger);
    }));
  }

  // Cards, tables, timeline

  function render() {
    if (!snap) return;
    const replicas = snap.replicas || [];
    const parts = snap.partitions || [];
    // With partitions, each replica leads some; the leader card and the
    // step-down button are about the one lock, so they stand aside.
    const leader = parts.length ? null : replicas.find((r) => r.leader);
    const queue = snap.queue || {};
    const self = snap.self || {};

    $('leader-name').textContent = leader ? leader.workerId : 'none';
    $('leader-token').textContent = leader ? '#' + leader.token : '';
    const term = leader && (snap.history || []).find((h) => h.token === leader.token);
    $('leader-sub').replaceChildren(...(leader
      ? [(leader.host || '?') + ' · leading for ', rel(term ? parseTime(term.started) : null, true)]
      : ['no replica holds the lock']));
    $('leader-label').textContent = parts.length ? 'Partitions' : 'Leader';
    if (parts.length) {
      const owned = parts.filter((p) => p.owner).length;
      $('leader-name').textContent = owned + ' of ' + parts.length;
      $('leader-sub').textContent = 'owned, by ' + replicas.filter((r) => r.leader).length + ' replicas';
    }
    $('queue-pending').textContent = fmtInt(queue.pending);
    $('queue-committed').textContent = fmtInt(queue.committed);
    $('queue-rate').textContent = (Number(queue.ratePerSec) || 0).toFixed(1) + ' jobs/s';
    $('queue-delayed').textContent = fmtInt(queue.delayed || 0);
    $('queue-paused').hidden = !queue.paused;
    $('dead-count').textContent = fmtInt(queue.deadLettered);
    $('replica-count').textContent = String(replicas.length);
    $('epoch').textContent = String(snap.epoch ?? '—');
    $('self-id').textContent = self.workerId || '—';
    $('self-state').textContent = self.state || '—';
    $('read-at').textContent = clock(parseTime(snap.readAt));

    renderLanes(self.lanes || []);
    renderFleet(replicas, self.workerId, parts.length > 0);
    renderPartitions(parts);
    renderParked(queue);
    renderSchedules(snap.schedules || []);
    renderDead(queue);
    renderHistory(snap.history || [], leader);
    renderActions(leader, queue);
    renderChart();
    renderRecent();
  }

  // renderLanes lists this replica's lanes (one per partition): each
  // one's state, and why it does not lead (or, holding the lease, runs
  // nothing: paused). A lane with a token leads.
  function renderLanes(lanes) {
    const leading = lanes.filter((l) => l.token).length;
    $('lanes-meta').textContent = lanes.length + (lanes.length === 1 ? ' lane' : ' lanes') + ' · ' + leading + ' leading';
    swap($('lanes-body'), ...lanes.map((l) => el('tr', {
      class: l.token ? 'is-leader' : '', 'data-partition': l.partition, 'data-state': l.state,
    },
    el('td', { class: 'num mono', text: String(l.partition) }),
    el('td', {}, el('span', { class: 'pill', text: l.state })),
    el('td', { class: 'num mono' + (l.token ? ' token-cell' : ' dim'), text: l.token ? '#' + l.token : '—' }),
    el('td', { class: l.reason ? 'reason' : 'dim', title: l.reason || '', text: l.reason || 'leading' }))));
  }

  // renderFleet lists the replicas; with partitions (split), the token
  // column says how many partitions each one owns.
  function renderFleet(replicas, selfId, split) {
    const leader = split ? null : replicas.find((r) => r.leader);
    $('fleet-meta').textContent = replicas.length + (replicas.length === 1 ? ' replica' : ' replicas') +
      (split ? '' : leader ? ' · leader ' + leader.workerId : ' · no leader');
    $('fleet-token-head').textContent = split ? 'Partitions' : 'Token';
    if (!replicas.length) {
      swap($('fleet-body'), el('tr', {}, el('td', { colspan: 9, class: 'dim', text: 'No live replica has reported.' })));
      return;
    }
    swap($('fleet-body'), ...replicas.map((r) => el('tr', {
      class: r.leader ? 'is-leader' : '',
      'data-worker': r.workerId,
    },
    el('td', { class: 'worker' }, r.workerId,
      r.leader && !split ? el('span', { class: 'badge badge-leader', text: 'leader' }) : null,
      r.workerId === selfId ? el('span', { class: 'badge badge-self', text: 'this page' }) : null),
    el('td', { text: r.host || '—' }),
    el('td', { class: 'num', text: r.pid ? String(r.pid) : '—' }),
    el('td', { class: 'mono', text: r.version || '—' }),
    el('td', {}, el('span', { class: 'pill', text: r.state || '—' })),
    split
      ? el('td', { class: 'num owned', text: String((r.partitions || []).length) })
      : el('td', { class: 'num mono' + (r.leader ? ' token-cell' : ' dim'), text: r.leader ? '#' + r.token : '—' }),
    el('td', {}, rel(parseTime(r.since))),
    el('td', { class: 'num', text: fmtInt(r.jobsDone) }),
    // Without the admin token, an error's class only (lastErrorClass):
    // the error itself may quote a handler's output.
    el('td', { class: r.lastErrorClass ? 'err' : 'dim', title: r.lastError || '', text: r.lastError || r.lastErrorClass || '—' }))));
  }

  function renderPartitions(parts) {
    $('partitions-panel').hidden = !parts.length;
    const free = parts.filter((p) => !p.owner).length;
    $('partitions-meta').textContent = parts.length + ' partitions · ' + (free ? free + ' without an owner' : 'every one owned');
    swap($('partitions-body'), ...parts.map((p) => el('tr', {
      class: p.owner ? '' : 'is-free', 'data-partition': p.partition, 'data-owner': p.owner,
    },
    el('td', { class: 'num mono', text: String(p.partition) }),
    el('td', { class: p.owner ? 'worker' : 'err', text: p.owner || 'no owner' }),
    el('td', { class: 'num mono' + (p.owner ? ' token-cell' : ' dim'), text: p.owner ? '#' + p.token : '—' }),
    el('td', { class: 'num', text: fmtInt(p.pending) }),
    el('td', { class: p.pending ? 'oldest' : 'dim', text: p.pending ? fmtMs(p.oldestPendingMs) : '—' }),
    el('td', { class: 'num delayed' + (p.delayed ? '' : ' dim'), text: fmtInt(p.delayed || 0) }),
    el('td', { class: 'num', text: fmtInt(p.committed) }),
    el('td', {}, p.paused ? el('span', { class: 'badge badge-paused', text: 'paused' }) : el('span', { class: 'dim', text: 'running' })))));
  }

  // renderSchedules lists the schedules: when each ticks, its last and
  // next tick. A last tick older than twice the schedule's period (the
  // LockworkerScheduleLate alert's rule) marks its row late. The payload
  // is not in the snapshot: no reader sees it here.
  function renderSchedules(list) {
    const late = list.filter(scheduleLate).length;
    $('schedules-meta').textContent = list.length + (list.length === 1 ? ' schedule' : ' schedules') + (late ? ' · ' + late + ' late' : '');
    if (!list.length) {
      swap($('schedules-body'), el('tr', {}, el('td', { colspan: 7, class: 'dim', text: 'No schedules (lockworker schedule add).' })));
      return;
    }
    swap($('schedules-body'), ...list.map((s) => {
      const last = parseTime(s.lastTick);
      const next = parseTime(s.nextTick);
      return el('tr', { class: scheduleLate(s) ? 'is-late' : '', 'data-schedule': s.name, 'data-partition': s.partition },
        el('td', { class: 'mono', text: s.name }),
        el('td', { class: 'num mono', text: String(s.partition) }),
        el('td', { class: 'mono when', text: s.every ? 'every ' + s.every : 'cron ' + s.cron + (s.tz ? ' (' + s.tz + ')' : ' (UTC)') }),
        el('td', { class: s.key ? 'mono' : 'dim', text: s.key || '—' }),
        el('td', { text: s.catchUp || '—' }),
        el('td', { class: 'last-tick' + (last ? '' : ' dim'), title: last ? last.toLocaleString() : '' }, last ? rel(last) : 'not yet'),
        el('td', { class: 'next-tick' + (next ? '' : ' dim'), title: next ? next.toLocaleString() : '' },
          ...(next ? [clock(next) + ' · ', untilSpan(next)] : ['never'])));
    }));
  }

  function scheduleLate(s) {
    const last = parseTime(s.lastTick);
    return !!(last && s.periodMs > 0 && Date.now() - last.getTime() > 2 * s.periodMs);
  }

  // untilSpan is a span that keeps saying how long until d (tickTimes).
  function untilSpan(d) {
    const span = el('span', { class: 'until' }, until(d));
    span.dataset.ts = String(d.getTime());
    return span;
  }

  // until says how long until d: "in 42s", "in 3m 5s"; "due" once passed.
  function until(d) {
    const ms = d.getTime() - Date.now();
    if (ms <= 0) return 'due';
    return 'in ' + (ms < 60000 ? Math.ceil(ms / 1000) + 's' : fmtMs(ms));
  }

  function renderDead(queue) {
    const dead = queue.deadLetters || [];
    const total = queue.deadLettered || dead.length;
    $('dead-meta').textContent = total > dead.length ? 'latest ' + dead.length + ' of ' + total : (total ? total + ' total' : '');
    if (!dead.length) {
      swap($('dead-body'), el('tr', {}, el('td', { colspan: 6, class: 'dim', text: 'No dead letters.' })));
      return;
    }
    swap($('dead-body'), ...dead.map((d) => el('tr', { 'data-job': d.id },
      el('td', { class: 'job', title: d.id, text: d.id }),
      el('td', { class: 'err', text: d.error || d.class || '—' }),
      el('td', { class: 'num', text: String(d.attempts ?? '—') }),
      el('td', {}, rel(parseTime(d.failedAt))),
      el('td', { class: 'num mono dim', text: d.token ? '#' + d.token : '—' }),
      el('td', { class: 'col-action' }, admin ? actionButton('requeue:' + d.id, 'Requeue', 'btn btn-small',
        () => act('requeue:' + d.id, 'api/deadletters/' + encodeURIComponent(d.id) + '/requeue',
          (body) => 'Requeued ' + d.id + ' as ' + (body.id || 'a new job'))) : null))));
  }

  // renderParked lists the parked keys: each holds its failing job and
  // every later job of its key until Retry or Skip (two clicks; the
  // reason in the panel's field goes with it).
  function renderParked(queue) {
    const parked = queue.parkedKeys || [];
    const total = queue.parked || parked.length;
    $('parked-meta').textContent = total > parked.length ? 'longest parked ' + parked.length + ' of ' + total : (total ? total + ' parked' : '');
    $('skip-reason').hidden = !admin || !parked.length;
    if (!parked.length) {
      swap($('parked-body'), el('tr', {}, el('td', { colspan: 8, class: 'dim', text: 'No parked keys: every key flows.' })));
      return;
    }
    swap($('parked-body'), ...parked.map((k) => {
      const ref = { key: k.key, jobId: k.jobId };
      const label = k.key ? k.key : 'job ' + k.jobId;
      return el('tr', { 'data-key': k.key, 'data-job': k.jobId },
        el('td', { class: k.key ? 'worker' : 'dim', text: k.key || '(no key)' }),
        el('td', { class: 'num mono', text: String(k.partition) }),
        el('td', { class: 'num', text: fmtInt(k.held) }),
        el('td', { class: 'job', title: k.jobId, text: k.jobId }),
        el('td', { class: 'num', text: String(k.attempts ?? '—') }),
        el('td', { class: 'err', text: k.error || k.class || '—' }),
        el('td', {}, rel(parseTime(k.parkedAt))),
        el('td', { class: 'col-action' }, ...(admin ? [
          actionButton('retrykey:' + k.jobId, 'Retry', 'btn btn-small btn-primary',
            () => act('retrykey:' + k.jobId, 'api/keys/retry', () => 'Retrying ' + label + ': its held jobs follow', ref)),
          actionButton('skipkey:' + k.jobId, 'Skip', 'btn btn-small btn-danger', () => {
            if (confirmed('skipkey:' + k.jobId)) {
              act('skipkey:' + k.jobId, 'api/keys/skip', (body) => 'Skipped ' + (body.id || k.jobId) + ' to the dead letters; ' + label + ' flows again',
                Object.assign({ reason: $('skip-reason').value }, ref));
            }
          }),
        ] : [])));
    }));
  }

  function renderHistory(history, leader) {
    $('history-meta').textContent = history.length ? history.length + ' leaderships' : '';
    if (!history.length) {
      swap($('history'), el('li', { class: 'dim', text: 'No leadership recorded yet.' }));
      return;
    }
    swap($('history'), ...history.map((h, i) => {
      const started = parseTime(h.started);
      const reason = h.previousEnded || '';
      const prev = history[i + 1];
      return el('li', {
        class: leader && leader.token === h.token ? 'current' : '',
        'data-token': h.token,
      },
      el('div', { class: 'tl-head' },
        el('span', { class: 'tl-token', text: '#' + h.token }),
        el('span', { class: 'tl-worker', text: h.workerId }),
        el('span', { class: 'tl-time', title: started ? started.toLocaleString() : '' }, 'started ' + clock(started) + ' · ', rel(started))),
      el('div', { class: 'tl-sub' },
        reason || prev ? 'took over after ' + (prev ? '#' + prev.token : 'the previous leader') : 'first leadership recorded',
        reason ? el('span', { class: 'reason reason-' + reason.replace(/[^a-z_]/g, ''), text: REASONS[reason] || reason }) : null));
    }));
  }

  // Actions: only with a token the server accepted.

  function actionButton(key, label, cls, run) {
    const waiting = confirming === key;
    return el('button', {
      type: 'button',
      class: cls + ' action' + (waiting ? ' confirm' : ''),
      'data-action': key.split(':')[0],
      disabled: busy.has(key),
      onclick: run,
    }, waiting ? 'Confirm ' + label.toLowerCase() + '?' : label);
  }

  // confirmed returns true on the second click within 5 s.
  function confirmed(key) {
    if (confirming === key) {
      confirming = '';
      clearTimeout(confirmTimer);
      return true;
    }
    confirming = key;
    clearTimeout(confirmTimer);
    confirmTimer = setTimeout(() => { confirming = ''; render(); }, 5000);
    render();
    return false;
  }

  function renderActions(leader, queue) {
    const la = [], qa = [];
    if (admin && leader) {
      la.push(actionButton('stepdown', 'Step down', 'btn btn-small btn-danger', () => {
        // The leader when clicked (swap may have kept this button from an
        // earlier one), named by the token the page shows: once that
        // leadership has ended, the request does nothing.
        const cur = ((snap && snap.replicas) || []).find((r) => r.leader);
        if (!cur) return;
        if (confirmed('stepdown')) {
          act('stepdown', 'api/stepdown?token=' + encodeURIComponent(cur.token),
            () => 'Asked ' + cur.workerId + ' (#' + cur.token + ') to step down');
        }
      }));
    }
    if (admin) {
      qa.push(queue.paused
        ? actionButton('resume', 'Resume', 'btn btn-small btn-primary', () => act('resume', 'api/queue/resume', () => 'Queue resumed'))
        : actionButton('pause', 'Pause', 'btn btn-small', () => act('pause', 'api/queue/pause', () => 'Queue paused')));
    }
    swap($('leader-actions'), ...la);
    swap($('queue-actions'), ...qa);
  }

  // act posts an action, with a JSON body when one is given.
  async function act(key, url, success, body) {
    busy.add(key);
    render();
    try {
      const headers = { Authorization: 'Bearer ' + token, 'X-Lockworker-Client': 'dashboard' };
      if (body) headers['Content-Type'] = 'application/json';
      const res = await fetch(url, { method: 'POST', headers, body: body ? JSON.stringify(body) : undefined });
      const answer = await res.json().catch(() => ({}));
      if (res.status === 401) {
        lock();
        toast('The admin token was rejected. Enter it again.', true);
      } else if (!res.ok) {
        toast(answer.error || 'The action failed (HTTP ' + res.status + ').', true);
      } else {
        toast(success(answer));
        if (answer.warning) toast(answer.warning, true);
      }
    } catch (e) {
      toast('The action could not be sent: ' + e.message, true);
    } finally {
      busy.delete(key);
      render();
    }
  }

  function toast(text, error) {
    const t = el('div', { class: 'toast' + (error ? ' toast-error' : ''), role: error ? 'alert' : 'status', text });
    $('toasts').append(t);
    setTimeout(() => t.remove(), error ? 8000 : 4000);
  }

  // Admin token

  async function checkToken(candidate) {
    const res = await fetch('api/auth', { method: 'POST', headers: { Authorization: 'Bearer ' + candidate } });
    return res.status === 204;
  }

  function showAdmin() {
    $('admin').hidden = !actionsOn;
    $('admin-open').hidden = admin;
    $('admin-on').hidden = !admin;
    if (admin) $('admin-form').hidden = true;
  }

  function lock() {
    token = '';
    admin = false;
    confirming = '';
    sessionStorage.removeItem(TOKEN_KEY);
    showAdmin();
    render();
    // Drops the errors shown in full: the public view replaces them.
    fetchSnapshot().then((s) => { snap = s; render(); }).catch(() => {});
  }

  function formError(text) {
    $('admin-error').textContent = text;
    $('admin-error').hidden = !text;
  }

  function wireAdmin() {
    $('admin-open').addEventListener('click', () => {
      $('admin-form').hidden = false;
      $('admin-open').hidden = true;
      $('admin-token').focus();
    });
    $('admin-cancel').addEventListener('click', () => {
      $('admin-form').hidden = true;
      $('admin-open').hidden = false;
      formError('');
    });
    $('admin-lock').addEventListener('click', lock);
    $('admin-form').addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const candidate = $('admin-token').value.trim();
      formError('');
      try {
        if (!(await checkToken(candidate))) {
          $('admin-token').value = '';
          formError('Wrong token');
          return;
        }
      } catch (e) {
        formError('Could not check the token');
        return;
      }
      token = candidate;
      admin = true;
      sessionStorage.setItem(TOKEN_KEY, token);
      $('admin-token').value = '';
      showAdmin();
      render();
      if (snap) show(snap); // errors in full
    });
  }

  async function start() {
    wireAdmin();
    try {
      const info = await (await fetch('api/info')).json();
      actionsOn = !!info.actions;
    } catch (e) {
      actionsOn = false;
    }
    if (actionsOn && token) {
      admin = await checkToken(token).catch(() => false);
      if (!admin) lock();
    } else if (!actionsOn) {
      token = '';
    }
    showAdmin();
    connect();
    loadChart();
    setInterval(tickTimes, 1000);
  }

  start();
})();
