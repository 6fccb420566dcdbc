// A following student's view of the lecturer's step (explorer/classroom/web.py serves this file).
// The page's script runs nothing while the lecturer steps: this loop long-polls the class's state and draws
// the view the lecturer's run rendered once. A change of page or question (or a page whose view is not
// relayed) clicks the page's hidden "sync" button instead: one run of the student's page applies it.
(function () {
  "use strict";
  const gen = (window.__adxFollowGen = (window.__adxFollowGen || 0) + 1);
  if (window.__adxFollowAbort) window.__adxFollowAbort.abort();
  const abort = (window.__adxFollowAbort = new AbortController());
  const root = document.getElementById("adx-follow");
  if (!root) return;
  const live = () => gen === window.__adxFollowGen && !abort.signal.aborted && root.isConnected;
  const code = root.dataset.code, page = root.dataset.page, question = root.dataset.question || "";
  const base = new URL(".", window.location.href).href;
  const api = base + "class/api/" + encodeURIComponent(code);
  const status = root.querySelector(".adx-follow-status");
  const out = root.querySelector(".adx-follow-view");
  let plotly = null;
  const SYNC_AGAIN_MS = 3000;
  const pause = (ms) => new Promise((ok) => setTimeout(ok, ms));

  function loadPlotly() {
    if (window.Plotly) return Promise.resolve(window.Plotly);
    if (!plotly) plotly = new Promise((ok, fail) => {
      const s = document.createElement("script");
      s.src = base + "class/static/plotly.min.js";
      s.onload = () => ok(window.Plotly);
      s.onerror = () => { plotly = null; fail(new Error("plotly.js did not load")); };
      document.head.appendChild(s);
    });
    return plotly;
  }

  function sync(why) {
    root.dataset.sync = why;
    const button = document.querySelector(".st-key-class_sync button");
    if (button) button.click();
  }

  function say(text) { if (status) status.textContent = text; }

  // draw the relayed view of ``version``; false when it could not be fetched (a newer step, the server away)
  async function show(version) {
    try {
      const r = await fetch(api + "/view/" + version, { signal: abort.signal, cache: "no-store" });
      if (!r.ok) return false;
      await draw(await r.json(), version);
      return true;
    } catch (e) {
      return false;
    }
  }

  async function draw(view, version) {
    const Plotly = view.blocks.some(hasPlot) ? await loadPlotly() : null;
    if (!live()) return;
    const header = document.createElement("div");
    header.className = "adx-follow-header";
    header.innerHTML = view.header;       // built by the server from engine text, escaped there
    const body = document.createElement("div");
    const plots = [];
    for (const block of view.blocks) body.appendChild(node(block, plots));
    out.replaceChildren(header, body);
    for (const [el, fig] of plots) {
      const layout = Object.assign({}, fig.layout || {}, { autosize: true });
      await Plotly.react(el, fig.data || [], layout, { displaylogo: false, responsive: true, staticPlot: false });
    }
    root.dataset.shownVersion = String(version);
  }

  function hasPlot(b) { return b.kind === "plot" || ((b.kind === "row" || b.kind === "column") && b.blocks.some(hasPlot)); }

  function node(block, plots) {
    const el = document.createElement("div");
    if (block.kind === "html") { el.innerHTML = block.html; }
    else if (block.kind === "plot") { el.className = "adx-follow-plot"; plots.push([el, block.figure]); }
    else if (block.kind === "column") { block.blocks.forEach((b) => el.appendChild(node(b, plots))); }
    else if (block.kind === "row") {
      el.className = "adx-follow-row";
      block.blocks.forEach((b, i) => {
        const cell = node(b, plots);
        cell.style.flex = String((block.widths || [])[i] || 1);
        cell.style.minWidth = "0";
        el.appendChild(cell);
      });
    }
    return el;
  }

  async function run() {
    let since = parseInt(root.dataset.since || "-1", 10), failures = 0;
    while (live()) {
      let msg;
      try {
        const r = await fetch(api + "/state?since=" + since, { signal: abort.signal, cache: "no-store" });
        if (r.status === 404) { say("The class is not there right now (it ended, or the class server restarted: waiting for the lecturer)"); throw new Error("gone"); }
        if (!r.ok) { say("The class server is unreachable; reconnecting…"); throw new Error("status " + r.status); }
        msg = await r.json();
        failures = 0;
      } catch (e) {
        if (!live()) return;
        failures += 1;
        await pause(Math.min(250 * failures, 2000));
        continue;
      }
      if (!live()) return;
      say("");
      // a sync click that found no live session (its replica just died; the page reconnects by itself) is
      // clicked again until a run of the page replaces this box (and this loop)
      if (msg.page !== page) { sync("page"); await pause(SYNC_AGAIN_MS); continue; }
      if (msg.question !== question) {
        // the new state's view first (the server masks a question's answer in it), then one run of the page for
        // the question's card: the old view (the step's numbers: the answer) never stays beside a new question
        if (msg.version !== since && !(msg.view && await show(msg.version))) out.replaceChildren();
        if (!live()) return;
        since = msg.version;
        sync("question"); await pause(SYNC_AGAIN_MS); continue;
      }
      if (msg.version !== since) {
        if (!msg.view) { sync("no-view"); await pause(SYNC_AGAIN_MS); continue; }
        if (!(await show(msg.version))) {
          if (!live()) return;
          await pause(300); continue;   // asked again at once
        }
      }
      since = msg.version;
    }
  }
  run();
})();
