// The a2e live view. Every value is shown with textContent (never as
// markup); the server's SVG is copied element by element through an
// allow-list. Updates arrive over Server-Sent Events; nothing polls.
'use strict';
(() => {
  const $ = (id) => document.getElementById(id);
  const SVG_NS = 'http://www.w3.org/2000/svg';
  const LOG_MAX = 500;
  const runs = new Map();       // run_id -> summary
  let cur = null;               // the selected run: {id, nodes, states, records, rows, marks, maxSeq, trace}
  let loading = null;           // run_id being loaded, with items that came meanwhile
  let pending = [];
  let selNode = null;
  const log = [];

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    for (const k of kids) if (k != null) e.append(k instanceof Node ? k : String(k));
    return e;
  }
  const text = (v) => (typeof v === 'string' ? v : JSON.stringify(v, null, 2));
  const short = (v, n) => { const s = text(v) || ''; return s.length > n ? s.slice(0, n) + '…' : s; };
  const ms = (d) => (d == null ? '' : d < 1000 ? d + ' ms' : (d / 1000).toFixed(2) + ' s');
  const time = (t) => new Date(t).toLocaleTimeString();
  async function get(path) {
    const r = await fetch(path, { credentials: 'same-origin', cache: 'no-store' });
    if (!r.ok) throw new Error(path + ': ' + r.status);
    return r.json();
  }
  // Actions: POSTs with the CSRF token of this page's session.
  let csrf = null;
  async function post(path, body) {
    if (!csrf) csrf = (await get('/ui/api/csrf')).csrf;
    const r = await fetch(path, { method: 'POST', credentials: 'same-origin', cache: 'no-store',
      headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': csrf }, body: JSON.stringify(body || {}) });
    const d = await r.json().catch(() => ({}));
    if (!r.ok) throw new Error(d.error || path + ': ' + r.status);
    return d;
  }

  // --- the server's SVG, copied through an allow-list
  const TAGS = new Set(['svg', 'g', 'title', 'defs', 'marker', 'polygon', 'rect', 'path', 'text', 'tspan', 'ellipse', 'circle', 'line', 'polyline']);
  const ATTRS = /^(class|data-[a-z-]+|id|x|y|dx|dy|width|height|rx|ry|cx|cy|r|d|points|fill|stroke|stroke-width|stroke-dasharray|marker-end|viewBox|text-anchor|dominant-baseline|font-size|font-weight|font-family|paint-order|refX|refY|orient|markerWidth|markerHeight|markerUnits|role|aria-label)$/;
  function copy(n) {
    if (n.nodeType === 3) return document.createTextNode(n.nodeValue);
    if (n.nodeType !== 1 || n.namespaceURI !== SVG_NS || !TAGS.has(n.localName)) return null;
    const e = document.createElementNS(SVG_NS, n.localName);
    for (const a of n.attributes) {
      if (!ATTRS.test(a.name)) continue;
      if (a.name === 'marker-end' && !/^url\(#[\w-]+\)$/.test(a.value)) continue;
      e.setAttribute(a.name, a.value);
    }
    for (const c of n.childNodes) { const k = copy(c); if (k) e.append(k); }
    return e;
  }
  function importSvg(src) {
    const doc = new DOMParser().parseFromString(src, 'image/svg+xml');
    return doc.documentElement.localName === 'svg' ? copy(doc.documentElement) : null;
  }

  // --- sessions and runs
  function showSessions(list) {
    const body = $('sessions').tBodies[0];
    body.replaceChildren(...list.map((s) => el('tr', { title: s.id }, el('td', {}, s.agent || '(no handshake)'), el('td', {}, s.transport), el('td', {}, String(s.in_flight)))));
    $('session-count').textContent = '(' + list.length + ')';
  }
  function runShown(r) {
    const status = $('run-status').value, agent = $('run-agent').value, q = $('run-search').value.trim().toLowerCase();
    if (status && r.status !== status) return false;
    if (agent && r.agent !== agent) return false;
    return !q || r.run_id.toLowerCase().includes(q) || String(r.chain_id || '').toLowerCase().includes(q);
  }
  function showAgents() {
    const sel = $('run-agent'), was = sel.value;
    const agents = [...new Set([...runs.values()].map((r) => r.agent).filter(Boolean))].sort();
    sel.replaceChildren(el('option', { value: '' }, 'all agents'), ...agents.map((a) => el('option', { value: a }, a)));
    sel.value = agents.includes(was) ? was : '';
  }
  function showRuns() {
    showAgents();
    const items = [...runs.values()].filter(runShown).sort((a, b) => b.created_ms - a.created_ms).slice(0, 100);
    $('runs').replaceChildren(...items.map((r) => {
      const li = el('li', { class: r.status + (cur && cur.id === r.run_id ? ' sel' : '') },
        el('div', {}, r.chain_id || r.kind || 'run'), el('small', {}, r.status + ' · ' + time(r.created_ms) + ' · ' + r.agent + ' · ' + r.run_id.slice(0, 8)));
      li.dataset.run = r.run_id;
      li.addEventListener('click', () => { $('follow').checked = false; openRun(r.run_id); });
      return li;
    }));
  }

  // --- calls that wait for a decision, with approve / deny (confirmed first)
  let waitingList = [];
  function waitingNodes() {
    return new Set(waitingList.filter((w) => cur && w.run_id === cur.id).map((w) => w.node_id));
  }
  function confirmRow(li, label, withReason, act) {
    for (const old of li.querySelectorAll('.confirm')) old.remove();
    const reason = withReason ? el('input', { type: 'text', placeholder: 'reason (required)', class: 'reason' }) : null;
    const said = el('span', { class: 'said' });
    const yes = el('button', { class: 'confirm-yes ' + (withReason ? 'deny' : 'approve') }, label);
    const no = el('button', { class: 'confirm-no' }, 'cancel');
    const row = el('div', { class: 'confirm' }, reason, yes, no, said);
    yes.addEventListener('click', async () => {
      if (withReason && !reason.value.trim()) { said.textContent = 'say why'; return; }
      yes.disabled = true;
      try { await act(reason && reason.value.trim()); said.textContent = 'done'; loadWaiting(); } catch (e) { said.textContent = String(e.message || e); yes.disabled = false; }
    });
    no.addEventListener('click', () => row.remove());
    li.append(row);
  }
  function showWaiting() {
    $('waiting-count').textContent = '(' + waitingList.length + ')';
    $('waiting').replaceChildren(...waitingList.map((w) => {
      const x = w.waiting || {};
      const path = '/ui/api/runs/' + encodeURIComponent(w.run_id);
      const approve = el('button', { class: 'approve' }, 'approve');
      const deny = el('button', { class: 'deny' }, 'deny');
      const li = el('li', {}, el('div', {}, (x.target || '') + ' ' + (x.name || '?') + ' · node ' + w.node_id),
        el('small', {}, 'run ' + w.run_id.slice(0, 8) + ' · waited ' + ms(w.waited_ms) + ' · ' + (x.reason || '')),
        el('pre', { class: 'args' }, text(x.args || {})), el('div', { class: 'actions' }, approve, deny));
      li.dataset.run = w.run_id; li.dataset.node = w.node_id;
      approve.addEventListener('click', () => confirmRow(li, 'confirm approve', false, () => post(path + '/approve', { node: w.node_id })));
      deny.addEventListener('click', () => confirmRow(li, 'confirm deny', true, (why) => post(path + '/deny', { node: w.node_id, reason: why })));
      return li;
    }));
    if (cur) for (const nid of cur.nodes.keys()) paint(nid);
  }
  async function loadWaiting() {
    try { waitingList = (await get('/ui/api/waiting')).waiting || []; } catch (e) { waitingList = []; }
    showWaiting();
  }
  function showRunActions() {
    const box = $('run-actions');
    if (!cur || cur.status !== 'running') { box.replaceChildren(); return; }
    const cancel = el('button', { class: 'cancel' }, 'cancel run');
    const li = el('div', {}, cancel);
    cancel.addEventListener('click', () => confirmRow(li, 'confirm cancel', false, () => post('/ui/api/runs/' + encodeURIComponent(cur.id) + '/cancel')));
    box.replaceChildren(li);
  }

  // --- one run
  async function openRun(id) {
    loading = id; pending = [];
    let d;
    try { d = await get('/ui/api/runs/' + encodeURIComponent(id)); } catch (e) { $('run-note').textContent = String(e); return; }
    if (loading !== id) return;
    const old = runs.get(id) || {};
    runs.set(id, Object.assign(old, d.summary, { chain_id: d.chain_id }));
    cur = { id, nodes: new Map(), states: new Map(), records: new Map(), rows: new Map(), marks: new Map(), maxSeq: -1, trace: d.trace_id, status: d.summary.status, kind: d.summary.kind, created: d.summary.created_ms, finished: d.summary.finished_ms };
    if (location.hash !== '#run=' + id) history.replaceState(null, '', '#run=' + encodeURIComponent(id));
    for (const n of d.nodes) cur.nodes.set(n.node_id, n);
    for (const [k, v] of Object.entries(d.states || {})) cur.states.set(k, v);
    for (const r of d.records) { if (!cur.records.has(r.node_id)) cur.records.set(r.node_id, []); cur.records.get(r.node_id).push(r); }
    $('run-title').textContent = (d.chain_id || 'run') + ' · ' + id;
    $('run-note').textContent = d.graph_error || '';
    const g = $('graph'); g.replaceChildren();
    const svg = d.svg ? importSvg(d.svg) : null;
    if (svg) {
      g.append(svg);
      for (const n of svg.querySelectorAll('g.node')) {
        const nid = n.getAttribute('data-node-id');
        cur.marks.set(nid, n);
        n.addEventListener('click', () => showNode(nid));
      }
    }
    const body = $('nodes').tBodies[0]; body.replaceChildren();
    for (const nid of cur.nodes.keys()) {
      const tr = el('tr', {}, el('td', {}, nid), el('td', {}, cur.nodes.get(nid).kind), el('td', { class: 'state' }), el('td', {}), el('td', {}));
      tr.addEventListener('click', () => showNode(nid));
      cur.rows.set(nid, tr); body.append(tr);
    }
    for (const e of d.events) { cur.maxSeq = Math.max(cur.maxSeq, e.seq); }
    loading = null;
    for (const nid of cur.nodes.keys()) paint(nid);
    showTimeline(); tick(); showRunActions();
    const held = pending; pending = [];
    for (const item of held) apply(item);
    $('detail').hidden = true; selNode = null;
    showRuns(); showLog();
  }
  function paint(nid) {
    let st = cur.states.get(nid) || { state: 'not-reached' };
    if (waitingNodes().has(nid)) st = Object.assign({}, st, { state: 'waiting' });
    const mark = cur.marks.get(nid);
    if (mark) mark.setAttribute('data-state', st.state);
    const tr = cur.rows.get(nid);
    if (tr) {
      const recs = cur.records.get(nid) || [];
      tr.cells[2].textContent = st.state; tr.cells[2].className = 'state st-' + st.state;
      tr.cells[3].textContent = String(recs.length);
      tr.cells[4].textContent = ms(liveMs(nid, st));
      tr.cells[2].textContent = st.state + (st.items ? ' · ' + st.items.done + '/' + st.items.total + ' done' : '');
    }
    if (selNode === nid) showNode(nid);
  }
  // A running node's duration so far, from its latest attempt's start.
  function liveMs(nid, st) {
    if (st.state !== 'running') return st.duration_ms;
    const recs = cur.records.get(nid) || [];
    const last = recs.reduce((a, r) => (!a || r.attempt > a.attempt ? r : a), null);
    return last && last.started_ms && last.finished_ms == null ? Math.max(0, Date.now() - last.started_ms) : st.duration_ms;
  }
  // A map item (`template[3]`) counts on its template: running while any
  // item runs, failed when any failed, done when they are.
  const ITEM = /^(.*)\[(\d+)\]$/;
  function foldItems(tmpl) {
    const items = { total: 0, done: 0, failed: 0, running: 0, skipped: 0 };
    for (const [k, v] of cur.states) {
      const m = ITEM.exec(k);
      if (!m || m[1] !== tmpl) continue;
      items.total++;
      if (v.state === 'done') items.done++; else if (v.state === 'failed') items.failed++;
      else if (v.state === 'running') items.running++; else if (v.state === 'skipped') items.skipped++;
    }
    const state = items.running ? 'running' : items.failed ? 'failed' : items.total && items.skipped === items.total ? 'skipped' : items.done ? 'done' : 'not-reached';
    const old = cur.states.get(tmpl) || {};
    cur.states.set(tmpl, { state, duration_ms: old.duration_ms, items });
    paint(tmpl);
  }
  function changed(nid) {
    paint(nid);
    const m = ITEM.exec(nid);
    if (m && cur.nodes.has(m[1]) && !cur.nodes.has(nid)) foldItems(m[1]);
  }
  function record(nid, attempt) {
    if (!cur.records.has(nid)) cur.records.set(nid, []);
    const list = cur.records.get(nid);
    let r = list.find((x) => x.attempt === attempt);
    if (!r) { r = { node_id: nid, attempt, started_ms: 0, finished_ms: null, outcome: null }; list.push(r); }
    return r;
  }
  const PHASES = { start: 'running', done: 'done', error: 'failed', skip: 'skipped', waiting: 'waiting' };
  function apply(item) {
    if (!cur || item.run_id !== cur.id) return;
    if (item.kind === 'event') {
      if (item.seq <= cur.maxSeq) return;
      cur.maxSeq = item.seq;
      const ev = item.event || {}; const st = PHASES[ev.phase];
      if (st && ev.node_id) {
        const old = cur.states.get(ev.node_id) || {};
        cur.states.set(ev.node_id, { state: st, duration_ms: old.duration_ms });
        changed(ev.node_id);
      }
    } else if (item.kind === 'node_started') {
      const r = record(item.node_id, item.attempt); r.started_ms = item.ts_ms;
      if (item.start) r.start = Object.assign(r.start || {}, item.start);
      if (item.trace_id) cur.trace = item.trace_id;
      paint(item.node_id); showTimeline();
    } else if (item.kind === 'node_traced') {
      const r = record(item.node_id, item.attempt);
      r.start = Object.assign(r.start || {}, { trace_id: item.trace_id, span_id: item.span_id });
      paint(item.node_id);
    } else if (item.kind === 'node_finished') {
      const r = record(item.node_id, item.attempt); r.finished_ms = item.ts_ms; r.outcome = item.outcome;
      const st = cur.states.get(item.node_id);
      if (st && r.started_ms) st.duration_ms = r.finished_ms - r.started_ms;
      paint(item.node_id); showTimeline();
    } else if (item.kind === 'run_finished') {
      cur.status = item.status; cur.finished = item.ts_ms; tick(); showTimeline(); showRunActions();
    }
  }
  function showNode(nid) {
    selNode = nid;
    for (const [k, m] of cur.marks) m.classList.toggle('sel', k === nid);
    const n = cur.nodes.get(nid) || {};
    const st = cur.states.get(nid) || { state: 'not-reached' };
    const recs = (cur.records.get(nid) || []).slice().sort((a, b) => a.attempt - b.attempt);
    const last = recs[recs.length - 1];
    const out = last && last.outcome;
    const rows = [['state', st.state], ['kind', n.kind + (n.name ? ' ' + n.name : '')], ['attempts', String(recs.length)], ['duration', ms(liveMs(nid, st)) || '—']];
    if (st.items) rows.push(['items', st.items.done + '/' + st.items.total + ' done' + (st.items.failed ? ', ' + st.items.failed + ' failed' : '') + (st.items.running ? ', ' + st.items.running + ' running' : '')]);
    if (n.on_error) rows.push(['on_error', n.on_error === 'skip' ? 'skip: the chain goes on with a null output' : n.on_error === 'abort' ? 'abort: the chain fails' : 'run ' + n.on_error + ' instead']);
    const sd = (last && last.start) || {};
    if (sd.input !== undefined) rows.push(['called with', sd.input_bytes ? sd.input + '… (cut from ' + sd.input_bytes + ' bytes)' : sd.input]);
    if (n.input && Object.keys(n.input).length) rows.push(['input', n.input]);
    if (n.input_map && Object.keys(n.input_map).length) rows.push(['input_map', n.input_map]);
    if (out && out.ok === 'true') rows.push(['output', out.output]);
    if (out && out.ok === 'false') rows.push(['error', out.code + ': ' + out.message]);
    for (const r of recs.slice(0, -1)) if (r.outcome && r.outcome.ok === 'false') rows.push(['attempt ' + r.attempt, r.outcome.code + ': ' + r.outcome.message]);
    if (sd.trace_id || cur.trace) rows.push(['trace id', sd.trace_id || cur.trace]);
    if (sd.span_id) rows.push(['span id', sd.span_id]);
    $('detail-id').textContent = nid;
    $('detail-fields').replaceChildren(...rows.flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, typeof v === 'string' ? v : el('pre', {}, text(v)))]));
    // A finished chain runs again from here: a fork (its other nodes keep their results).
    const acts = $('detail-actions'); acts.replaceChildren();
    if (cur.kind === 'chain' && cur.status !== 'running' && cur.nodes.has(nid)) {
      const fork = el('button', { class: 'fork' }, 'fork from here');
      const box = el('div', {}, fork);
      fork.addEventListener('click', () => confirmRow(box, 'confirm fork', false, async () => {
        const d = await post('/ui/api/runs/' + encodeURIComponent(cur.id) + '/fork', { from: nid });
        $('follow').checked = false; openRun(d.run_id);
      }));
      acts.append(box);
    }
    $('detail').hidden = false;
  }

  // --- the timeline: each attempt's start and end, drawn in SVG
  function showTimeline() {
    const box = $('timeline');
    const rows = [];
    for (const list of cur.records.values()) for (const r of list) if (r.started_ms) rows.push(r);
    rows.sort((a, b) => a.started_ms - b.started_ms || a.attempt - b.attempt);
    if (!rows.length) { box.replaceChildren(); return; }
    const now = Date.now();
    const t0 = Math.min(cur.created || rows[0].started_ms, rows[0].started_ms);
    const ends = rows.map((r) => (r.finished_ms != null ? r.finished_ms : now));
    const t1 = Math.max(cur.finished || 0, ...ends, t0 + 1);
    const W = 640, LABEL = 150, ROW = 16, H = rows.length * ROW + 18;
    const x = (t) => LABEL + ((t - t0) / (t1 - t0)) * (W - LABEL - 10);
    const svg = document.createElementNS(SVG_NS, 'svg');
    for (const [k, v] of Object.entries({ class: 'gantt', viewBox: '0 0 ' + W + ' ' + H, width: W, height: H })) svg.setAttribute(k, v);
    const add = (parent, tag, attrs, txt) => { const e = document.createElementNS(SVG_NS, tag); for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v); if (txt != null) e.textContent = txt; parent.append(e); return e; };
    rows.forEach((r, i) => {
      const end = r.finished_ms != null ? r.finished_ms : now;
      const state = r.outcome ? (r.outcome.ok === 'true' ? 'done' : 'failed') : cur.status === 'running' ? 'running' : 'unfinished';
      const g = add(svg, 'g', { class: 'bar st-' + state, 'data-node-id': r.node_id });
      add(g, 'title', {}, r.node_id + ' · attempt ' + r.attempt + ' · ' + state + ' · ' + ms(end - r.started_ms));
      add(g, 'text', { x: LABEL - 6, y: i * ROW + 12, 'text-anchor': 'end' }, r.node_id + (r.attempt > 1 ? ' #' + r.attempt : ''));
      add(g, 'rect', { x: x(r.started_ms), y: i * ROW + 3, width: Math.max(2, x(end) - x(r.started_ms)), height: ROW - 5, rx: 2 });
      g.addEventListener('click', () => showNode(ITEM.test(r.node_id) && !cur.nodes.has(r.node_id) ? ITEM.exec(r.node_id)[1] : r.node_id));
    });
    add(svg, 'text', { x: LABEL, y: H - 3, class: 'axis' }, '0');
    add(svg, 'text', { x: W - 10, y: H - 3, class: 'axis', 'text-anchor': 'end' }, ms(t1 - t0));
    box.replaceChildren(svg);
  }
  // Once a second: running nodes' durations and the run's total tick.
  function tick() {
    if (!cur) { $('run-time').textContent = ''; return; }
    const end = cur.status === 'running' || cur.finished == null ? Date.now() : cur.finished;
    $('run-time').textContent = cur.created ? cur.status + ' · ' + ms(Math.max(0, end - cur.created)) : '';
    for (const [nid, st] of cur.states) if (st.state === 'running') paint(nid);
    if (cur.status === 'running') showTimeline();
  }
  function fromHash() {
    const m = /^#run=([^&]+)$/.exec(location.hash);
    if (!m) return;
    const id = decodeURIComponent(m[1]);
    if (cur && cur.id === id) return;
    $('follow').checked = false;
    openRun(id);
  }

  // --- the event log
  function describe(item) {
    switch (item.kind) {
      case 'run_started': return item.run_kind + ' ' + item.chain_id + ' by ' + item.agent;
      case 'run_finished': return item.status;
      case 'node_started': return 'attempt ' + item.attempt;
      case 'node_traced': return 'span ' + item.span_id;
      case 'node_finished': return item.outcome.ok === 'true' ? short(item.outcome.output, 200) : item.outcome.code + ': ' + item.outcome.message;
      case 'event': return (item.event.phase || '') + ' ' + (item.event.error || (item.event.output != null ? short(item.event.output, 200) : ''));
      default: return '';
    }
  }
  function logRow(item) {
    const node = item.node_id || (item.event && item.event.node_id) || '';
    return el('tr', {}, el('td', {}, time(item.at)), el('td', {}, item.kind), el('td', { title: item.run_id }, (item.run_id || '').slice(0, 8)), el('td', {}, node), el('td', {}, describe(item)));
  }
  function matches(item) {
    const kind = $('log-kind').value, q = $('log-text').value.toLowerCase();
    if (kind && item.kind !== kind) return false;
    if ($('log-run').checked && (!cur || item.run_id !== cur.id)) return false;
    return !q || JSON.stringify(item).toLowerCase().includes(q);
  }
  function showLog() {
    $('log').tBodies[0].replaceChildren(...log.filter(matches).slice(-200).reverse().map(logRow));
  }
  function addLog(item) {
    item.at = item.ts_ms || Date.now();
    log.push(item); if (log.length > LOG_MAX) log.shift();
    if (matches(item)) {
      const body = $('log').tBodies[0];
      body.prepend(logRow(item));
      while (body.rows.length > 200) body.deleteRow(-1);
    }
  }

  // --- the catalog
  function showCatalog(c) {
    const entry = (name, desc, schema) => el('details', {}, el('summary', {}, name, ' ', el('small', {}, desc || '')), el('pre', {}, text(schema || {})));
    $('catalog').replaceChildren(
      el('h3', {}, 'Tools (' + c.tools.length + ')'), ...c.tools.map((t) => entry(t.name, t.description, { input: t.input_parameters, output: t.output_parameters })),
      el('h3', {}, 'Skills (' + c.skills.length + ')'), ...c.skills.map((s) => entry(s.name, s.description, { input: s.input_schema, output: s.output_schema })));
  }

  // --- the live feed
  function onItem(item) {
    if (item.kind === 'sessions') return showSessions(item.sessions);
    if (item.kind === 'lagged') return refresh();
    if (item.kind === 'stale') { if (cur && item.run_id === cur.id) openRun(cur.id); return; }
    addLog(item);
    if (/^@(approval|decision)\//.test(item.node_id || '') || item.kind === 'run_finished') loadWaiting();
    if (item.kind === 'run_started') {
      runs.set(item.run_id, { run_id: item.run_id, kind: item.run_kind, chain_id: item.chain_id, agent: item.agent, status: 'running', created_ms: item.ts_ms });
      showRuns();
      if ($('follow').checked) openRun(item.run_id);
      return;
    }
    if (item.kind === 'run_finished') {
      const r = runs.get(item.run_id); if (r) { r.status = item.status; r.finished_ms = item.ts_ms; showRuns(); }
    }
    if (loading && item.run_id === loading) pending.push(item); else apply(item);
  }
  async function refresh() {
    try {
      const o = await get('/ui/api/overview');
      showSessions(o.sessions);
      $('flags').textContent = (o.journal ? (o.journal_memory ? 'journal off: runs kept in memory' : 'journal on') : 'journal off: runs are not shown') + ' · telemetry ' + (o.telemetry ? 'on' : 'off');
      for (const r of o.runs || []) runs.set(r.run_id, Object.assign(runs.get(r.run_id) || {}, r));
      showRuns();
      if (cur) openRun(cur.id);
    } catch (e) { $('flags').textContent = String(e); }
  }
  function connect() {
    const es = new EventSource('/ui/events');
    es.onopen = () => { $('conn').textContent = 'live'; $('conn').className = 'conn up'; };
    es.onerror = () => { $('conn').textContent = 'reconnecting…'; $('conn').className = 'conn'; };
    es.onmessage = (m) => { try { onItem(JSON.parse(m.data)); } catch (e) { console.error(e); } };
  }
  for (const id of ['log-kind', 'log-text', 'log-run']) $(id).addEventListener('input', showLog);
  for (const id of ['run-status', 'run-agent', 'run-search']) $(id).addEventListener('input', showRuns);
  window.addEventListener('hashchange', fromHash);
  setInterval(tick, 1000);
  fromHash();
  connect();
  refresh();
  loadWaiting();
  get('/ui/api/catalog').then(showCatalog, (e) => { $('catalog').textContent = String(e); });
})();
