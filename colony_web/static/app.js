// Colony web page: draws what the server says and sends clicks; no game rule lives here.
// The server (colony_web/app.py) lists the legal actions, explains illegal clicks in the
// engine's words, plays the agents and replays records.
"use strict";

const SIZE = 10, MARGIN = 30, CELL = 50, RADIUS = 18;
const FILES = "abcdefghij";
const SVGNS = "http://www.w3.org/2000/svg";
const $ = (id) => document.getElementById(id);

const ui = {
  tab: "play",
  game: null,          // play: the server's view of the current game
  selected: null,      // play: index of the selected satellite
  landing: null,       // play: displacement landing cell waiting for a push choice
  busy: false,         // a request that changes the game is on its way
  paused: false,
  timer: null,
  replay: null,        // replay: {positions, moves, movers, last, ...} of one recorded game
  ply: 0,
  values: [],          // red's value per ply of the shown game (analysis graph)
  valuesKey: "",
  analysis: null,
  analysisKey: "",
  shownValues: [],     // the graph drawn (kept while a new analyser's values arrive)
  thinkingSince: 0,    // when the agent to move started thinking (ms), for the elapsed time shown
  bestSoFar: null,
  cancelling: false,   // an undo or resignation is stopping the agent's search
  bannerHidden: "",    // the game whose end banner the player clicked away     // the thinking search's best move so far (what Stop plays)
  clock: null,
};

// docs/rules.md R6.2: why a game ended, in words
const END_WORDS = {
  connected23: "23 satellites are connected (R6.2.1)",
  grace: "the grace moves are over (R6.2.2)",
  passes: "two passes in a row (R6.2.3)",
  ply_limit: "the ply limit was reached (R6.2.4)",
  resignation: "resignation",
};

function cellName(i) { return FILES[i % SIZE] + (SIZE - Math.floor(i / SIZE)); }
function cellXY(i) { return [MARGIN + (i % SIZE) * CELL, MARGIN + Math.floor(i / SIZE) * CELL]; }
function centre(i) { const [x, y] = cellXY(i); return [x + CELL / 2, y + CELL / 2]; }

function arrow(from, to, attrs, parent, gap) {
  // a line from the centre of `from` that stops `gap` short of the centre of `to`, so its head shows
  const [x1, y1] = centre(from), [x2, y2] = centre(to);
  const len = Math.hypot(x2 - x1, y2 - y1) || 1;
  const k = Math.max(0, len - gap) / len;
  return el("line", { x1, y1, x2: x1 + (x2 - x1) * k, y2: y1 + (y2 - y1) * k, ...attrs }, parent);
}

function el(name, attrs, parent, text) {
  const e = document.createElementNS(SVGNS, name);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  if (parent) parent.appendChild(e);
  return e;
}

function say(text, kind) {
  const m = $("message");
  m.textContent = text || "";
  m.className = text ? (kind || "info") : "";
}

async function api(method, path, body) {
  const opts = { method, headers: {} };
  if (body !== undefined) {
    opts.headers["Content-Type"] = typeof body === "string" ? "text/plain" : "application/json";
    opts.body = typeof body === "string" ? body : JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(path, opts);
  } catch (e) {
    throw new Error("the server cannot be reached (is colony-web still running?)");
  }
  let data;
  try { data = await res.json(); } catch (e) { data = { error: `${res.status} ${res.statusText}` }; }
  if (!res.ok) throw new Error(data.error || `${res.status} ${res.statusText}`);
  return data;
}

// ---------------------------------------------------------------- board drawing
function currentPosition() {
  if (ui.tab === "play") return ui.game;
  return ui.replay ? ui.replay.positions[ui.ply] : null;
}

function currentLast() {
  if (ui.tab === "play") return ui.game ? ui.game.last : null;
  return ui.replay ? ui.replay.last[ui.ply] : null;
}

function legalNow() {
  return ui.tab === "play" && ui.game && !ui.busy ? ui.game.legal : null;
}

function drawBoard() {
  const svg = $("board");
  svg.replaceChildren();
  const defs = el("defs", {}, svg);
  for (const [id, colour] of [["arrow-last", "#f1c40f"], ["arrow-hint", "#16a085"], ["arrow-search", "#7d3c98"]]) {
    const m = el("marker", { id, viewBox: "0 0 10 10", refX: 7, refY: 5, markerWidth: 4, markerHeight: 4, orient: "auto" }, defs);
    el("path", { d: "M0,0 L10,5 L0,10 z", fill: colour }, m);
  }
  const pos = currentPosition();
  const last = currentLast();
  const gCells = el("g", {}, svg);
  for (let i = 0; i < SIZE * SIZE; i++) {
    const [x, y] = cellXY(i);
    const r = Math.floor(i / SIZE), c = i % SIZE;
    const edge = r === 0 || r === SIZE - 1 || c === 0 || c === SIZE - 1;
    const cls = "cell" + (edge ? " edge" : "") + (last && (last.from === i || last.to === i || last.push === i) ? " last-cell" : "");
    el("rect", { x, y, width: CELL, height: CELL, class: cls, "data-cell": cellName(i) }, gCells);
  }
  for (let k = 0; k < SIZE; k++) {
    el("text", { x: MARGIN + k * CELL + CELL / 2, y: MARGIN + SIZE * CELL + 18, class: "coord" }, svg, FILES[k]);
    el("text", { x: MARGIN + k * CELL + CELL / 2, y: 20, class: "coord" }, svg, FILES[k]);
    el("text", { x: 14, y: MARGIN + k * CELL + CELL / 2 + 4, class: "coord" }, svg, String(SIZE - k));
    el("text", { x: MARGIN + SIZE * CELL + 15, y: MARGIN + k * CELL + CELL / 2 + 4, class: "coord" }, svg, String(SIZE - k));
  }
  if (!pos) return;
  drawOwnership(svg, pos);
  // colonies: a tinted patch per cell in the controller's colour (totals are drawn above the satellites)
  for (const col of pos.colonies) {
    const who = col.controller || "none";
    const g = el("g", { class: "colony-group", "data-controller": who }, svg);
    for (const i of col.cells) {
      const [x, y] = cellXY(i);
      el("rect", { x: x + 2, y: y + 2, width: CELL - 4, height: CELL - 4, rx: 6, class: `colony ${who}` }, g);
    }
  }
  for (const [a, b] of pos.links) {
    const [x1, y1] = centre(a), [x2, y2] = centre(b);
    el("line", { x1, y1, x2, y2, class: "link" }, svg);
  }
  if (last && last.from !== null) {
    arrow(last.from, last.to, { class: "last-move" }, svg, RADIUS + 6);
    if (last.push !== null) arrow(last.to, last.push, { class: "last-move" }, svg, RADIUS + 6);
  }
  const legal = legalNow();
  for (const s of pos.cells) {
    const movable = legal && legal.sources[s.index] !== undefined;
    const cls = `sat ${s.colour}` + (s.connected ? " connected" : "") + (movable ? " movable" : "") + (ui.selected === s.index ? " selected" : "");
    const g = el("g", { class: cls, "data-cell": s.name }, svg);
    const [cx, cy] = centre(s.index);
    el("circle", { cx, cy, r: RADIUS }, g);
    el("text", { x: cx, y: cy }, g, String(s.value));
  }
  for (const col of pos.colonies) {  // totals red:blue at the colony's first cell, a crown when it holds 6
    const who = col.controller || "none";
    const [x, y] = cellXY(Math.min(...col.cells));
    const label = `${col.red_total}:${col.blue_total}` + (col.crowned ? " \u265b" : "");
    // on the top edge of the colony's first cell: between its satellite and the one above, over neither
    el("text", { x: x + CELL / 2, y, class: "colony-label", fill: who === "red" ? "#a12820" : who === "blue" ? "#1d4f96" : "#444" }, svg, label);
  }
  drawTargets(svg, legal);
  drawHints(svg);
  const hits = el("g", {}, svg);
  for (let i = 0; i < SIZE * SIZE; i++) {
    const [x, y] = cellXY(i);
    const r = el("rect", { x, y, width: CELL, height: CELL, class: "hit", "data-cell": cellName(i) }, hits);
    r.addEventListener("click", () => onCellClick(i));
  }
  drawEndBanner(svg, pos);  // last: above the click targets, so that a click on it puts it away
}

function drawTargets(svg, legal) {
  if (!legal || ui.selected === null) return;
  const targets = legal.sources[ui.selected] || {};
  for (const [to, t] of Object.entries(targets)) {
    const i = Number(to);
    if (ui.landing !== null && ui.landing !== i) continue;  // choosing a push: only that landing and its pushes
    const [cx, cy] = centre(i);
    const attrs = { class: `target target-${t.kind}`, "data-cell": cellName(i), "data-kind": t.kind };
    if (t.kind === "normal") el("circle", { cx, cy, r: 8, ...attrs }, svg);
    else el("circle", { cx, cy, r: RADIUS + 5, ...attrs }, svg);
    if (ui.landing === i) {
      for (const choice of t.actions) {
        const [px, py] = cellXY(choice.push);
        el("rect", { x: px + 14, y: py + 14, width: 22, height: 22, rx: 4, class: "target target-push", "data-cell": cellName(choice.push), "data-kind": "push" }, svg);
      }
    }
  }
}

function currentAnalysis() {
  const pos = currentPosition();
  return $("analyse").checked && ui.analysis && pos && JSON.stringify(pos.state) === ui.analysisKey ? ui.analysis : null;
}

function drawOwnership(svg, pos) {
  const a = currentAnalysis();
  if (!a || !a.ownership || !$("ownership").checked) return;
  const g = el("g", { class: "ownership" }, svg);
  a.ownership.forEach((v, i) => {  // red's view: +1 red will control this cell's colony, -1 blue
    if (Math.abs(v) < 0.05) return;
    const [x, y] = cellXY(i);
    el("rect", { x: x + 1, y: y + 1, width: CELL - 2, height: CELL - 2, class: `own ${v > 0 ? "red" : "blue"}`,
      "fill-opacity": (0.7 * Math.sqrt(Math.abs(v))).toFixed(2), "data-cell": cellName(i), "data-own": v }, g);
  });
}

function analysisRows(a) {
  // one row per move: the search's visits first (what the agent plays on), then the policy's probability
  const rows = new Map();
  for (const m of a.policy || []) rows.set(m.notation, { move: m.notation, from: m.from, to: m.to, prob: m.prob });
  for (const m of (a.search && a.search.moves) || []) {
    rows.set(m.notation, { ...(rows.get(m.notation) || { move: m.notation, from: m.from, to: m.to }), visits: m.visits, q: m.q });
  }
  return [...rows.values()].sort((x, y) => ((y.visits || 0) - (x.visits || 0)) || ((y.prob || 0) - (x.prob || 0)));
}

function drawHints(svg) {
  const a = currentAnalysis();
  if (!a) return;
  const rows = analysisRows(a).slice(0, 5);
  const total = a.search ? Math.max(1, a.search.simulations) : 1;
  const placed = [];
  rows.forEach((r, k) => {
    if (r.from === null || r.from === undefined) return;
    const share = a.search ? (r.visits || 0) / total : (r.prob || 0);
    const kind = a.search ? "search" : "policy";
    arrow(r.from, r.to, { class: `hint ${kind}` + (k === 0 ? " best" : ""), "stroke-width": 2 + 10 * share, "data-move": r.move }, svg, 10);
    // the move's rank in a disc near its target, moved aside when another disc is there (moves along one line)
    const [x1, y1] = centre(r.from), [x2, y2] = centre(r.to);
    let x = x1 + 0.72 * (x2 - x1), y = y1 + 0.72 * (y2 - y1);
    while (placed.some(([px, py]) => Math.hypot(px - x, py - y) < 16)) { x += 15; y -= 9; }
    placed.push([x, y]);
    const g = el("g", { class: `hint-rank ${kind}`, "data-move": r.move }, svg);
    el("circle", { cx: x, cy: y, r: 8 }, g);
    el("text", { x, y }, g, String(k + 1));
  });
  if ($("show-pv").checked) {
    (a.pv || []).forEach((m, k) => {
      if (m.to === null) return;
      const [x, y] = cellXY(m.to);
      const g = el("g", { class: `pv-mark ${m.mover}`, "data-move": m.notation }, svg);
      el("rect", { x: x + CELL - 17, y: y + CELL - 17, width: 15, height: 15, rx: 3 }, g);
      el("text", { x: x + CELL - 9.5, y: y + CELL - 9.5 }, g, String(k + 1));
    });
  }
}

function drawEndBanner(svg, pos) {
  const key = `${ui.tab}|${ui.tab === "play" ? ui.game && ui.game.id : ui.replay && ui.replay.name + ui.replay.index}`;
  if (!pos.over || ui.bannerHidden === key) return;
  const who = pos.result === "draw" ? "draw" : `${pos.result} wins`;
  const why = pos.end_reason === "resignation" ? `${pos.resigned} resigned` : (END_WORDS[pos.end_reason] || pos.end_reason);
  const g = el("g", { class: `end-banner ${pos.result}`, id: "end-banner" }, svg);
  g.addEventListener("click", () => { ui.bannerHidden = key; drawBoard(); });
  el("title", {}, g, "click to see the board");
  el("rect", { x: MARGIN + 40, y: MARGIN + 195, width: SIZE * CELL - 80, height: 110, rx: 10 }, g);
  el("text", { x: MARGIN + SIZE * CELL / 2, y: MARGIN + 240, class: "end-title" }, g, who);
  el("text", { x: MARGIN + SIZE * CELL / 2, y: MARGIN + 275, class: "end-why" }, g,
    `${why} \u00b7 colonies ${pos.controlled.red}:${pos.controlled.blue}`);
}

// ---------------------------------------------------------------- side panel
function describeResult(pos) {
  if (!pos.over) return "";
  if (pos.end_reason === "resignation") return `${pos.result} wins: ${pos.resigned} resigned`;
  return pos.result === "draw" ? `draw (${pos.end_reason})` : `${pos.result} wins (${pos.end_reason})`;
}

function bolt() {
  const svg = document.createElementNS(SVGNS, "svg");
  svg.setAttribute("viewBox", "0 0 10 16");
  svg.setAttribute("class", "bolt");
  el("path", { d: "M6 0 L0 9 H4 L3 16 L10 6 H6 Z" }, svg);
  return svg;
}

function drawFacts() {
  const pos = currentPosition();
  const facts = $("facts");
  facts.replaceChildren();
  $("result").textContent = "";
  if (!pos) return;
  const st = pos.state;
  const lines = [];
  if (!pos.over) lines.push(`${st.to_move} to move, ply ${st.ply} of at most ${st.max_plies}`);
  else lines.push(`ply ${st.ply}`);
  lines.push(st.unlocked ? "connections unlocked (an edge has been empty)" : "connections locked: no edge has been empty yet");
  lines.push(`connected: red ${pos.connected.red}, blue ${pos.connected.blue} (${pos.connected.red + pos.connected.blue} of 23 ends the game)`);
  if (st.finished) lines.push(`${st.finished} finished; ${st.finished === "red" ? "blue" : "red"} has ${st.grace_left} grace move${st.grace_left === 1 ? "" : "s"} left`);
  const lead = pos.leader === "draw" ? "level" : `${pos.leader} ahead`;
  const score = pos.over ? `final score: ${pos.result === "draw" ? "draw" : pos.result + " wins"} (R7)` : `score as it stands: ${lead}`;
  lines.push(`colonies controlled: red ${pos.controlled.red}, blue ${pos.controlled.blue} \u2014 ${score}`);
  for (const text of lines) {
    const d = document.createElement("div");
    d.textContent = text;
    facts.appendChild(d);
  }
  if (st.finished) {  // the card's lightning: one bolt per grace move left
    const d = document.createElement("div");
    d.className = "grace";
    d.title = "grace moves left";
    for (let k = 0; k < st.grace_left; k++) d.appendChild(bolt());
    facts.appendChild(d);
  }
  $("result").textContent = describeResult(pos);
  $("result").className = pos.over ? `over ${pos.result}` : "";
  $("result-detail").textContent = pos.over ? (pos.end_reason === "resignation" ? "" : END_WORDS[pos.end_reason] || "") : "";
}

function drawMoves() {
  const list = $("moves");
  list.replaceChildren();
  const src = ui.tab === "play" ? ui.game : ui.replay;
  if (!src) return;
  src.moves.forEach((mv, k) => {
    const li = document.createElement("li");
    li.textContent = mv;
    li.className = src.movers[k] + (ui.tab === "replay" && k === ui.ply - 1 ? " current" : "");
    li.dataset.ply = String(k + 1);
    if (ui.tab === "replay") li.addEventListener("click", () => gotoPly(k + 1));
    list.appendChild(li);
  });
  const cur = list.querySelector(".current") || list.lastElementChild;
  if (cur) list.scrollTop = cur.offsetTop - list.clientHeight / 2;  // scroll the list only, never the page
}

function drawStatus() {
  const s = $("status");
  if (ui.tab === "play" && ui.game) {
    const g = ui.game;
    const names = `red: ${g.players.red} \u00b7 blue: ${g.players.blue}`;
    const turn = `<i class="turn ${g.state.to_move}"></i>`;
    const esc = (t) => t.replace(/[&<>]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;" })[c]);
    if (g.over) s.innerHTML = `${esc(names)} \u2014 game over`;
    else if (ui.thinkingSince) {
      const secs = Math.floor((Date.now() - ui.thinkingSince) / 1000);
      const best = ui.bestSoFar ? ` \u00b7 best so far ${esc(ui.bestSoFar)}` : "";
      s.innerHTML = `${esc(names)} \u2014 ${turn}${g.state.to_move} (${esc(g.players[g.state.to_move])}) is thinking\u2026${best} ${secs} s`;
    } else if (g.thinking || ui.busy) s.innerHTML = `${esc(names)} \u2014 ${turn}${g.state.to_move} (${esc(g.players[g.state.to_move])}) is thinking\u2026`;
    else s.innerHTML = `${esc(names)} \u2014 ${turn}${g.state.to_move} to move`;
  } else if (ui.tab === "replay" && ui.replay) {
    const r = ui.replay;
    s.textContent = `${r.name} game ${r.index}: ${r.agents.red} (red) vs ${r.agents.blue} (blue) \u2014 ${r.result} by ${r.end_reason}`;
  } else s.textContent = "";
  const g = ui.game;
  const humanSide = g && !g.over && ["red", "blue"].some((c) => g.players[c] === "human");
  // while an agent thinks in a game with a human side, Undo and Resign end its search (the server cancels it)
  const canInterrupt = Boolean(ui.thinkingSince) && humanSide && !ui.cancelling;
  const humanMoved = g && g.movers.some((m) => g.players[m] === "human");
  $("undo").disabled = !g || g.moves.length === 0 || g.over || (ui.busy && !(canInterrupt && humanMoved));
  $("resign").disabled = !humanSide || (ui.busy && !canInterrupt);
  $("pass").disabled = !(g && g.legal && g.legal.pass !== null) || ui.busy;
  const watching = g && g.players.red !== "human" && g.players.blue !== "human";
  $("pause").disabled = !watching || g.over;
  $("pause").textContent = ui.paused ? "Resume" : "Pause";
  $("stop").disabled = !(ui.thinkingSince && ui.bestSoFar);
  if (ui.replay) {
    $("ply-text").textContent = `of ${ui.replay.moves.length}`;
    $("ply").max = String(ui.replay.moves.length);
    $("ply").value = String(ui.ply);
  }
}

function render() {
  drawBoard();
  drawFacts();
  drawMoves();
  drawStatus();
  drawAnalysisPanel();
  refreshAnalysis();
}

// ---------------------------------------------------------------- play
async function newGame() {
  clearTimeout(ui.timer);
  const body = { red: $("red").value.trim() || "human", blue: $("blue").value.trim() || "human" };
  const seed = $("seed").value.trim();
  if (seed !== "") body.seed = Number(seed);
  const maxPlies = $("max-plies").value.trim();
  if (maxPlies !== "") body.max_plies = Number(maxPlies);
  ui.busy = true;
  say("starting a new game\u2026");
  try {
    ui.game = await api("POST", "/api/games", body);
    ui.selected = ui.landing = null;
    ui.paused = false;
    ui.values = [];
    say("");
  } catch (e) {
    say(e.message, "error");
  } finally {
    ui.busy = false;
  }
  render();
  pump();
}

async function branchGame() {  // Replay -> Play: a new game from the position shown
  const pos = ui.replay && ui.replay.positions[ui.ply];
  if (!pos) return;
  if (pos.over) { say("the game is over in this position: step back to branch from an earlier ply", "info"); return; }
  const body = { red: $("red").value.trim() || "human", blue: $("blue").value.trim() || "human", state: pos.state };
  try {
    const g = await api("POST", "/api/games", body);
    setTab("play");
    ui.game = g;
    ui.selected = ui.landing = null;
    ui.paused = false;
    say(`a new game from ply ${ui.ply} of ${ui.replay.name} game ${ui.replay.index}`, "info");
    render();
    pump();
  } catch (e) {
    say(e.message, "error");
  }
}

async function openGame(id) {  // a game started elsewhere (another tab, the API): ?game=ID
  try {
    ui.game = await api("GET", `/api/games/${encodeURIComponent(id)}`);
    $("red").value = ui.game.players.red;
    $("blue").value = ui.game.players.blue;
    $("seed").value = ui.game.seed === null ? "" : String(ui.game.seed);
    $("max-plies").value = String(ui.game.state.max_plies);
  } catch (e) {
    say(e.message, "error");
  }
  render();
  pump();
}

async function change(path, body) {
  ui.busy = true;
  drawStatus();
  try {
    ui.game = await api("POST", `/api/games/${ui.game.id}/${path}`, body);
    return true;
  } catch (e) {
    say(e.message, "error");
    return false;
  } finally {
    ui.busy = false;
    ui.selected = ui.landing = null;
    render();
  }
}

async function play(action) {
  say("");
  if (await change("move", { action })) pump();
}

function agentToMove() {
  const g = ui.game;
  return g && !g.over && g.players[g.state.to_move] !== "human";
}

function pump() {
  clearTimeout(ui.timer);
  if (!agentToMove() || ui.paused || ui.tab !== "play" || ui.cancelling) return;
  const g = ui.game;
  const watching = g.players.red !== "human" && g.players.blue !== "human";
  ui.timer = setTimeout(step, watching ? Number($("speed").value) : 0);
}

async function step() {
  if (!agentToMove() || ui.busy || ui.paused) return;
  const id = ui.game.id;
  ui.thinkingSince = Date.now();
  ui.bestSoFar = null;
  ui.clock = setInterval(pollThinking, 1000);  // the elapsed time of the agent's search, its best move so far
  let ok;
  try {
    ok = await change("step");
  } finally {
    clearInterval(ui.clock);
    ui.thinkingSince = 0;
    ui.bestSoFar = null;
    drawStatus();
  }
  if (ok && ui.game.id === id) pump();
}

async function pollThinking() {
  const g = ui.game;
  if (g && ui.thinkingSince) {
    try {
      const v = await api("GET", `/api/games/${g.id}`);
      if (ui.thinkingSince && ui.game && ui.game.id === v.id) ui.bestSoFar = v.stoppable ? v.best_so_far : null;
    } catch (e) { /* the step's own answer reports problems */ }
  }
  drawStatus();
}

async function interrupting(request) {
  // an undo or a resignation while the agent thinks: no new step until the server has answered it
  ui.cancelling = Boolean(ui.thinkingSince);
  try {
    await request();
  } finally {
    ui.cancelling = false;
    drawStatus();
    pump();
  }
}

async function stopSearch() {
  try {
    const r = await api("POST", `/api/games/${ui.game.id}/stop`);
    say(`stopped: the search plays its best move so far, ${r.plays}`, "info");
  } catch (e) {
    say(e.message, "error");
  }
}

async function explain(from, to) {
  const q = `from=${cellName(from)}` + (to === undefined ? "" : `&to=${cellName(to)}`);
  try {
    const r = await api("GET", `/api/games/${ui.game.id}/explain?${q}`);
    say(r.message, "error");
  } catch (e) {
    say(e.message, "error");
  }
}

function onCellClick(i) {
  if (ui.tab !== "play" || !ui.game) return;
  const g = ui.game;
  if (g.over) { say(`the game is over: ${describeResult(g)}; start a new game`, "info"); return; }
  if (ui.busy || g.thinking) { say("wait: the agent is thinking", "info"); return; }
  const legal = g.legal;
  if (!legal) { say(`${g.state.to_move} is played by ${g.players[g.state.to_move]}, not by you`, "info"); return; }
  if (ui.landing !== null) {
    const choice = legal.sources[ui.selected][ui.landing].actions.find((a) => a.push === i);
    if (choice) { play(choice.action); return; }
    ui.landing = null;
  }
  if (ui.selected !== null && legal.sources[ui.selected] && legal.sources[ui.selected][i]) {
    const t = legal.sources[ui.selected][i];
    if (t.actions.length === 1) { play(t.actions[0].action); return; }
    ui.landing = i;
    say(`displacement to ${cellName(i)}: click where the pushed satellite goes (purple squares)`, "info");
    drawBoard();
    return;
  }
  if (legal.sources[i]) {
    ui.selected = i;
    ui.landing = null;
    say("");
    drawBoard();
    return;
  }
  if (ui.selected !== null && ui.selected !== i) explain(ui.selected, i);
  else explain(i);
  ui.selected = null;
  drawBoard();
}

// ---------------------------------------------------------------- replay
function fillRecordSelect(files, selectId) {
  const sel = $("record-select");
  sel.replaceChildren();
  for (const f of files) {
    const o = document.createElement("option");
    o.value = f.id;
    o.textContent = `${f.name} (${f.games.length} games)`;
    o.dataset.summary = JSON.stringify(f);
    sel.appendChild(o);
  }
  if (selectId) sel.value = selectId;
  fillGameSelect();
}

function fillGameSelect() {
  const opt = $("record-select").selectedOptions[0];
  const sel = $("game-select");
  sel.replaceChildren();
  if (!opt) return;
  for (const g of JSON.parse(opt.dataset.summary).games) {
    const o = document.createElement("option");
    o.value = String(g.index);
    o.textContent = `${g.index}: ${g.agents.red} vs ${g.agents.blue}, ${g.result} by ${g.end_reason}, ${g.plies} plies`;
    sel.appendChild(o);
  }
  loadRecordGame();
}

async function loadRecordGame() {
  const rid = $("record-select").value, n = $("game-select").value;
  if (!rid || n === "") return;
  const note = "replaying the record with the engine\u2026";
  say(note);
  try {
    ui.replay = await api("GET", `/api/records/${rid}/games/${n}`);
    ui.values = [];
    ui.ply = 0;
    if ($("message").textContent === note) say("");  // keep any message that came meanwhile
  } catch (e) {
    ui.replay = null;
    say(e.message, "error");
  }
  render();
}

async function uploadRecord(file) {
  if (!file) return;
  try {
    const text = await file.text();
    const summary = await api("POST", `/api/records?name=${encodeURIComponent(file.name)}`, text);
    const info = await api("GET", "/api/info");
    const files = info.records.some((f) => f.id === summary.id) ? info.records : [...info.records, summary];
    fillRecordSelect(files, summary.id);
  } catch (e) {
    say(e.message, "error");
  }
}

function gotoPly(p) {
  if (!ui.replay) return;
  ui.ply = Math.max(0, Math.min(ui.replay.moves.length, p));
  render();
}

// ---------------------------------------------------------------- analysis
function shownStates() {
  if (ui.tab === "replay") return ui.replay ? ui.replay.positions.length : 0;
  return ui.game ? ui.game.moves.length + 1 : 0;
}

async function refreshAnalysis() {
  if (!$("analyse").checked) return;
  const spec = $("analyser").value.trim();
  const pos = currentPosition();
  if (!spec || !pos) return;
  const key = JSON.stringify(pos.state);
  if (!pos.over && (ui.analysisKey !== key || ui.analysis === null || ui.analysis.analyser !== spec)) {
    ui.analysisKey = key;
    ui.analysis = null;
    try {
      const a = await api("POST", "/api/analyse", { analyser: spec, state: pos.state });
      if (ui.analysisKey === key) { ui.analysis = a; drawBoard(); drawAnalysisPanel(); }
    } catch (e) {
      say(`analysis: ${e.message}`, "error");
      return;
    }
  }
  await refreshValues(spec);
}

async function refreshValues(spec) {
  const key = spec + "|" + (ui.tab === "play" ? (ui.game && ui.game.id) : (ui.replay && `${ui.replay.name}:${ui.replay.index}`));
  if (ui.valuesKey !== key) { if (ui.values.length) ui.shownValues = ui.values; ui.values = []; ui.valuesKey = key; }
  const n = shownStates();
  if (ui.tab === "play" && ui.game && ui.values.length > n) ui.values.length = n;  // after an undo
  if (ui.values.length >= n) { drawAnalysisPanel(); return; }
  const body = ui.tab === "play" ? { analyser: spec, game: ui.game.id, from: ui.values.length }
    : { analyser: spec, states: ui.replay.positions.slice(ui.values.length).map((p) => p.state) };
  try {
    const r = await api("POST", "/api/values", body);
    if (ui.valuesKey === key) { ui.values = ui.values.concat(r.red_values); ui.shownValues = []; }
  } catch (e) {
    if (!/value head/.test(e.message)) say(`value graph: ${e.message}`, "error");
  }
  drawAnalysisPanel();
}

function drawAnalysisPanel() {
  const on = $("analyse").checked;
  const a = currentAnalysis();
  $("value-bar").classList.toggle("hidden", !(a && a.value !== null));
  const shaped = a && a.value !== null && a.shaping_scale > 0;
  $("value-note").classList.toggle("hidden", !shaped);
  if (shaped) $("value-note").textContent = `value = value head + \u03a6: trained with reward shaping (scale ${a.shaping_scale}), the head learns V \u2212 \u03a6`;
  if (a && a.value !== null) {
    const red = a.to_move === "red" ? a.value : -a.value;
    const p = Math.max(0, Math.min(1, (red + 1) / 2));
    $("value-red").style.width = `${(p * 100).toFixed(1)}%`;
    $("value-text").textContent = `red ${(p * 100).toFixed(0)}% \u00b7 blue ${(100 - p * 100).toFixed(0)}%`;
  }
  $("ownership-row").classList.toggle("hidden", !(a && a.ownership));
  $("analysis-options").classList.toggle("hidden", !a);
  const pv = $("pv");
  pv.classList.toggle("hidden", !(a && a.pv && a.pv.length));
  pv.replaceChildren();
  if (a && a.pv && a.pv.length) {
    const b = document.createElement("b");
    b.textContent = "line: ";
    b.title = `principal variation: ${a.pv_source}`;
    pv.appendChild(b);
    a.pv.forEach((m, k) => {
      const span = document.createElement("span");
      span.className = `pv-move ${m.mover}`;
      span.textContent = `${k + 1}. ${m.notation}`;
      pv.appendChild(span);
    });
    const src = document.createElement("small");
    src.textContent = ` (${a.pv_source})`;
    pv.appendChild(src);
  }
  const table = $("top-moves");
  table.classList.toggle("hidden", !a);
  const head = table.querySelector("thead tr"), body = table.querySelector("tbody");
  head.replaceChildren();
  body.replaceChildren();
  if (a) {
    const columns = [["#", (r, k) => String(k + 1)], ["move", (r, k) => (r.move === a.best ? `\u2605 ${r.move}` : r.move)]];
    if (a.policy) columns.push(["policy", (r) => (r.prob === undefined ? "" : `${(r.prob * 100).toFixed(1)}%`)]);
    if (a.search) {
      columns.push([`visits (of ${a.search.simulations})`, (r) => (r.visits === undefined ? "" : String(r.visits))]);
      columns.push([`${a.to_move} wins`, (r) => (r.q === undefined || r.q === null ? "" : `${((r.q + 1) * 50).toFixed(0)}%`)]);
    }
    for (const [name] of columns) { const th = document.createElement("th"); th.textContent = name; head.appendChild(th); }
    analysisRows(a).forEach((r, k) => {
      const tr = document.createElement("tr");
      if (r.move === a.best) { tr.className = "best"; tr.title = "the move the analyser would play"; }
      tr.dataset.move = r.move;
      columns.forEach(([, cell]) => { const td = document.createElement("td"); td.textContent = cell(r, k); tr.appendChild(td); });
      body.appendChild(tr);
    });
  }
  drawGraph(on);
}

function drawGraph(on) {
  const svg = $("value-graph");
  const vals = ui.values.length ? ui.values : ui.shownValues;  // the old graph stays until the new one is in
  svg.classList.toggle("hidden", !(on && vals.length > 0));
  svg.replaceChildren();
  if (!on || vals.length === 0) return;
  const W = Math.max(100, Math.round(svg.getBoundingClientRect().width)) || 300, H = 100, B = 14, n = Math.max(1, shownStates() - 1);
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);  // drawn in pixels: text keeps its shape at any width
  const x = (k) => 4 + (W - 8) * k / n, y = (v) => 4 + (H - B - 8) * (1 - (v + 1) / 2);
  el("line", { x1: 0, y1: y(0), x2: W, y2: y(0), stroke: "#bbb", "stroke-dasharray": "3 3" }, svg);
  const step = [10, 20, 50, 100, 200, 500, 1000].find((s) => n / s <= 8) || 2000;
  for (let k = 0; k <= n; k += step) {  // ply labels
    el("line", { x1: x(k), y1: H - B - 2, x2: x(k), y2: H - B + 2, stroke: "#999" }, svg);
    el("text", { x: x(k), y: H - 2, "font-size": 10, fill: "#666", "text-anchor": "middle", class: "ply-label" }, svg, String(k));
  }
  const pts = vals.map((v, k) => (v === null ? null : `${x(k).toFixed(1)},${y(v).toFixed(1)}`)).filter((p) => p);
  el("polyline", { points: pts.join(" "), fill: "none", stroke: "#c33", "stroke-width": 2, class: "value-line" }, svg);
  const cur = ui.tab === "replay" ? ui.ply : shownStates() - 1;
  el("line", { x1: x(cur), y1: 0, x2: x(cur), y2: H - B, stroke: "#f1c40f", "stroke-width": 2 }, svg);
  el("text", { x: 6, y: 12, "font-size": 10, fill: "#c33" }, svg, "red wins");
  el("text", { x: 6, y: H - B - 4, "font-size": 10, fill: "#36c" }, svg, "blue wins");
  svg.onclick = ui.tab !== "replay" ? null : (e) => {  // click: jump to that ply
    const r = svg.getBoundingClientRect();
    gotoPly(Math.round(((e.clientX - r.left) * W / r.width - 4) / (W - 8) * n));
  };
  svg.classList.toggle("clickable", ui.tab === "replay");
}

async function copyText(text, what) {
  try {
    await navigator.clipboard.writeText(text);
    say(`${what} copied`, "info");
  } catch (e) {  // no clipboard (an insecure origin): show it to copy by hand
    say(text, "info");
  }
}

function movesText() {
  const src = ui.tab === "play" ? ui.game : ui.replay;
  if (!src) return "";
  return src.moves.map((m, k) => (k % 2 === 0 ? `${k / 2 + 1}. ${m}` : m)).join(" ");
}

async function downloadRecord() {
  let rec;
  if (ui.tab === "play") {
    if (!ui.game) return;
    rec = await api("GET", `/api/games/${ui.game.id}/record`);
  } else {
    if (!ui.replay) return;
    const r = ui.replay;
    rec = { format: "colony-game-record", agents: r.agents, initial_state: r.positions[0].state, actions: r.actions,
      moves: r.moves, result: r.result, end_reason: r.end_reason, plies: r.actions.length,
      final_state: r.positions[r.positions.length - 1].state, meta: { source: r.name } };
  }
  const a = document.createElement("a");
  a.href = URL.createObjectURL(new Blob([JSON.stringify(rec) + "\n"], { type: "application/json" }));
  a.download = "game.jsonl";
  document.body.appendChild(a);
  a.click();
  a.remove();
}

// ---------------------------------------------------------------- wiring
function setTab(tab) {
  ui.tab = tab;
  for (const b of document.querySelectorAll(".tab")) b.classList.toggle("active", b.dataset.tab === tab);
  $("panel-play").classList.toggle("hidden", tab !== "play");
  $("panel-replay").classList.toggle("hidden", tab !== "replay");
  ui.analysis = null;
  say("");
  render();
  if (tab === "play") pump();
  else clearTimeout(ui.timer);
}

function fillDatalist(id, items) {
  const dl = $(id);
  dl.replaceChildren();
  for (const it of items) { const o = document.createElement("option"); o.value = it; dl.appendChild(o); }
}

async function init() {
  for (const b of document.querySelectorAll(".tab")) b.addEventListener("click", () => setTab(b.dataset.tab));
  $("new-game").addEventListener("click", newGame);
  $("undo").addEventListener("click", () => { ui.paused = false; say(""); interrupting(() => change("undo")); });
  $("resign").addEventListener("click", () => {
    const g = ui.game;
    const me = g.players[g.state.to_move] === "human" ? g.state.to_move : (g.players.red === "human" ? "red" : "blue");
    if (window.confirm(`Resign as ${me}? The game ends and is recorded as a loss for ${me}.`)) interrupting(() => change("resign", { colour: me }));
  });
  $("stop").addEventListener("click", stopSearch);
  $("branch").addEventListener("click", branchGame);
  $("copy-moves").addEventListener("click", () => copyText(movesText(), "moves"));
  $("copy-position").addEventListener("click", () => {
    const pos = currentPosition();
    if (pos) copyText(JSON.stringify(pos.state), "position (docs/rules.md R9)");
  });
  $("download").addEventListener("click", () => downloadRecord().catch((e) => say(e.message, "error")));
  $("ownership").addEventListener("change", drawBoard);
  $("show-pv").addEventListener("change", drawBoard);
  $("pass").addEventListener("click", () => play(ui.game.legal.pass));
  $("pause").addEventListener("click", () => { ui.paused = !ui.paused; drawStatus(); pump(); });
  $("speed").addEventListener("input", () => { $("speed-text").textContent = `${$("speed").value} ms`; });
  $("record-file").addEventListener("change", (e) => uploadRecord(e.target.files[0]));
  $("record-select").addEventListener("change", fillGameSelect);
  $("game-select").addEventListener("change", loadRecordGame);
  $("first").addEventListener("click", () => gotoPly(0));
  $("prev").addEventListener("click", () => gotoPly(ui.ply - 1));
  $("next").addEventListener("click", () => gotoPly(ui.ply + 1));
  $("last").addEventListener("click", () => gotoPly(Infinity));
  $("ply").addEventListener("change", () => gotoPly(Number($("ply").value)));
  $("analyse").addEventListener("change", () => { ui.analysis = null; render(); });
  $("analyser").addEventListener("change", () => { ui.analysis = null; if (ui.values.length) ui.shownValues = ui.values; ui.values = []; render(); });
  document.addEventListener("keydown", (e) => {
    if (ui.tab !== "replay" || e.target.tagName === "INPUT") return;
    // on a menu, up/down still choose in it, but left/right step the game (they would change the menu too)
    if (e.target.tagName === "SELECT" && e.key !== "ArrowLeft" && e.key !== "ArrowRight") return;
    const moves = { ArrowLeft: -1, ArrowRight: 1, Home: -Infinity, End: Infinity };
    if (e.key in moves) {
      e.preventDefault();
      gotoPly(Math.abs(moves[e.key]) === Infinity ? (moves[e.key] > 0 ? Infinity : 0) : ui.ply + moves[e.key]);
    }
  });
  try {
    const info = await api("GET", "/api/info");
    fillDatalist("agent-list", info.agents);
    fillDatalist("analyser-list", info.analysers);
    if (info.analysers.length) $("analyser").value = info.analysers[0];
    fillRecordSelect(info.records);
    if (info.load_errors.length) say(info.load_errors.join("; "), "error");
  } catch (e) {
    say(e.message, "error");
  }
  const params = new URLSearchParams(location.search);
  for (const key of ["red", "blue", "seed", "max-plies", "analyser"]) if (params.has(key)) $(key).value = params.get(key);
  if (params.get("analyse") === "1") $("analyse").checked = true;
  if (params.get("tab") === "replay") setTab("replay");
  else if (params.has("game")) openGame(params.get("game"));
  else newGame();
}

init();
