"use strict";

// The index: show the matches that pass every filter, a page of them at a time (the
// pager's `data-rows`), the page `matchPage` (from 0).
let matchPage = 0;

function filterMatches() {
  const game = document.getElementById("filter-game").value;
  const player = document.getElementById("filter-player").value;
  const result = document.getElementById("filter-result").value;
  const pager = document.querySelector(".pager");
  const size = pager === null ? Infinity : Number(pager.dataset.rows);
  const kept = [];
  for (const row of document.querySelectorAll("#matches tbody tr")) {
    const players = (row.dataset.players ?? "").split(" ");
    const winners = row.dataset.winners ? row.dataset.winners.split(" ") : [];
    const verified = row.dataset.verified === "yes";
    let keep = (!game || (row.dataset.game ?? "") === game) && (!player || players.includes(player));
    if (result === "failed") {
      keep = keep && !verified;
    } else if (result) {
      const drawn = verified && winners.length === 0;
      const won = verified && winners.length > 0 && (!player || winners.includes(player));
      const lost = verified && winners.length > 0 && (!player || !winners.includes(player));
      keep = keep && { win: won, draw: drawn, loss: lost }[result];
    }
    row.hidden = true;
    if (keep) kept.push(row);
  }
  const pages = Math.max(1, Math.ceil(kept.length / size));
  matchPage = Math.min(Math.max(matchPage, 0), pages - 1);
  const first = matchPage * size;
  for (const row of kept.slice(first, first + size)) row.hidden = false;
  document.getElementById("shown").textContent = String(kept.length);
  if (pager !== null) {
    pager.hidden = pages <= 1;
    const last = Math.min(first + size, kept.length);
    document.getElementById("page-label").textContent = `${first + 1}-${last} of ${kept.length}`;
    document.getElementById("page-previous").disabled = matchPage === 0;
    document.getElementById("page-next").disabled = matchPage === pages - 1;
  }
}

// Boards as SVG, from the cells' symbols: a role's pieces (X and O, x and o, a GDL game's
// word for them) drawn in the role's colour, # a blocker's cell, W a white blocker, . an
// empty cell, a space no cell at all; any other symbol (a GDL game's) is written in its
// cell. Colours come from classes and the style sheet, never from style attributes, so that
// a page under a strict Content-Security-Policy draws them.
const CELL = 34;
const MARGIN = 26;
// What a character of a board's 12 px labels takes, at most, for the room a row label needs.
const LABEL_CHAR = 7.5;
const PIECES = { W: "white" };

function svgElement(tag, attributes, children = "") {
  const text = Object.entries(attributes)
    .map(([name, value]) => ` ${name}="${String(value).replace(/&/g, "&amp;").replace(/"/g, "&quot;")}"`)
    .join("");
  return `<${tag}${text}>${children}</${tag}>`;
}

function escapeText(text) {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

function hexagon(cx, cy) {
  const r = CELL / Math.sqrt(3);
  const points = [];
  for (let k = 0; k < 6; k += 1) {
    const angle = (Math.PI / 3) * k + Math.PI / 6;
    points.push(`${(cx + r * Math.cos(angle)).toFixed(1)},${(cy + r * Math.sin(angle)).toFixed(1)}`);
  }
  return points.join(" ");
}

// How a frame's symbols are drawn as pieces: in the colour its legend gives each (a role's
// piece its role's, as in the answer-time chart; referee/report/colours.py decides which).
function piecesOf(keys) {
  const pieces = {};
  for (const key of keys) {
    if (key.symbol !== null && key.colour !== null) pieces[key.symbol] = key.colour;
  }
  return pieces;
}

// One cell's shape and what is on it, centred on (x, y).
function cellShape(symbol, x, y, hexagonal, pieces) {
  const kind = symbol === "#" ? "cell blocked" : "cell";
  let shape = hexagonal
    ? svgElement("polygon", { points: hexagon(x, y), class: kind })
    : svgElement("rect", { x: x - CELL / 2, y: y - CELL / 2, width: CELL, height: CELL, class: kind });
  const piece = pieces[symbol] ?? PIECES[symbol];
  if (piece !== undefined) {
    shape += svgElement("circle", { cx: x, cy: y, r: CELL * 0.34, class: `piece ${piece}` });
  } else if (symbol !== "." && symbol !== "#") {
    // A GDL game's own word for what is there.
    shape += svgElement("text", { x, y: y + 4, class: "word" }, escapeText(symbol));
  }
  return shape;
}

// The symbols of a board by "row column", to tell which cells a step changed.
function cellsOf(board) {
  const cells = new Map();
  board.rows.forEach(([label, symbols]) => {
    symbols.forEach((symbol, c) => cells.set(`${label} ${board.columns[c]}`, symbol));
  });
  return cells;
}

// A board's picture (or a legend's swatch of one cell): `content` is SVG already escaped.
function boardSvg(width, height, content) {
  const box = { xmlns: "http://www.w3.org/2000/svg", width, height, viewBox: `0 0 ${width} ${height}`, class: "board" };
  return svgElement("svg", box, content);
}

// A board, its cells changed since `before` (the same board a step earlier, or null) and
// its winning cells marked with classes; `pieces` as `piecesOf` gives them.
function drawBoard(board, before, pieces) {
  const rows = board.rows.length;
  const columns = board.columns.length;
  const rise = board.hexagonal ? CELL * 0.87 : CELL;
  const shift = board.hexagonal ? CELL / 2 : 0;
  // Room at the left for the longest row label (a GDL game's may be a role's name,
  // `xplayer`), not clipped at the picture's edge.
  const longest = Math.max(0, ...board.rows.map(([label]) => String(label).length));
  const left = Math.max(MARGIN, Math.ceil(10 + LABEL_CHAR * longest));
  const centre = (r, c) => [left + c * CELL + r * shift + CELL / 2, MARGIN + r * rise + CELL / 2];
  // A hexagon reaches further below its centre than a square does.
  const below = board.hexagonal ? CELL / Math.sqrt(3) : CELL / 2;
  const width = left + columns * CELL + (rows - 1) * shift + 4;
  const height = centre(rows - 1, 0)[1] + below + 4;
  const previous = before === null ? null : cellsOf(before);
  const winning = new Set(board.winning.map(([r, c]) => `${r} ${c}`));
  let parts = "";
  let marks = "";
  board.columns.forEach((label, c) => {
    parts += svgElement("text", { x: left + c * CELL + CELL / 2, y: MARGIN - 8, class: "label" }, escapeText(label));
  });
  board.rows.forEach(([label, cells], r) => {
    const [, y] = centre(r, 0);
    parts += svgElement("text", { x: left + r * shift - 6, y: y + 4, class: "label row" }, escapeText(label));
    cells.forEach((symbol, c) => {
      if (symbol === " ") return;
      const [x, yc] = centre(r, c);
      const column = board.columns[c];
      const was = previous === null ? symbol : previous.get(`${label} ${column}`);
      const flags = [];
      if (was !== undefined && was !== symbol) flags.push("changed");
      if (winning.has(`${r} ${c}`)) flags.push("winning");
      const place = { class: ["square", ...flags].join(" "), "data-row": label, "data-column": column, "data-mark": symbol };
      const title = `<title>${escapeText(`${label} ${column}: ${symbol}`)}</title>`;
      parts += svgElement("g", place, title + cellShape(symbol, x, yc, board.hexagonal, pieces));
      // Outlines go on top of every cell, so that no neighbour covers them.
      if (flags.length > 0) {
        const kind = ["outline", ...flags].join(" ");
        marks += board.hexagonal
          ? svgElement("polygon", { points: hexagon(x, yc), class: kind })
          : svgElement("rect", { x: x - CELL / 2 + 2, y: yc - CELL / 2 + 2, width: CELL - 4, height: CELL - 4, class: kind });
      }
    });
  });
  const svg = boardSvg(width, height, parts + marks);
  return `<figure>${svg}<figcaption>${escapeText(board.title)}</figcaption></figure>`;
}

// The facts of a frame beyond its boards, a table per relation, written as text.
function factTables(groups) {
  const box = document.createElement("div");
  box.className = "facts";
  for (const group of groups) {
    const table = document.createElement("table");
    const caption = table.createCaption();
    caption.textContent = group.relation;
    for (const row of group.rows) {
      table.insertRow().insertCell().textContent = row === "" ? "(true)" : row;
    }
    box.append(table);
  }
  return box;
}

// What a frame shows: its boards, changes since the frame before marked, and the facts
// that are no cells, with the text the terminal shows beneath; a state with neither shows
// its text.
function drawFrame(board, frame, before, pieces) {
  const text = `<pre class="board">${escapeText(frame.board)}</pre>`;
  if (frame.boards.length === 0 && frame.facts.length === 0) {
    board.innerHTML = text;
    return;
  }
  const drawn = frame.boards
    .map((b, k) => {
      const earlier = before === null ? null : before.boards[k];
      const same = earlier !== undefined && earlier !== null && earlier.title === b.title;
      return drawBoard(b, same ? earlier : null, pieces);
    })
    .join("");
  board.innerHTML = `<div class="boards">${drawn}</div><details><summary>as text</summary>${text}</details>`;
  if (frame.facts.length > 0) board.querySelector(".boards").append(factTables(frame.facts));
}

// The legend: each symbol drawn as on the board, what it means, and whose it is.
function drawLegend(legend, keys, pieces) {
  const list = document.createElement("ul");
  for (const key of keys) {
    const item = document.createElement("li");
    if (key.role !== null) item.dataset.role = key.role;
    if (key.symbol !== null) {
      const swatch = document.createElement("span");
      swatch.className = "swatch";
      swatch.dataset.symbol = key.symbol;
      const size = CELL + 2;
      swatch.innerHTML = boardSvg(size, size, cellShape(key.symbol, size / 2, size / 2, false, pieces));
      item.append(swatch);
    }
    const meaning = document.createElement("span");
    meaning.textContent = key.meaning;
    item.append(meaning);
    if (key.player !== null) {
      const player = document.createElement("strong");
      player.className = "player";
      player.textContent = key.player;
      item.append(" played by ", player);
    }
    list.append(item);
  }
  legend.replaceChildren(list);
}

// The step a URL's fragment names (`#step=12`): the nearest one there is, or 0 for none.
function stepOf(hash, last) {
  const found = /^#step=(\d{1,9})$/.exec(hash);
  return found === null ? 0 : Math.min(Number(found[1]), last);
}

// A match page: one frame per step, moved through by the slider, the buttons, the keys and
// the URL's `#step=N`, which follows the step shown. What it returns takes the frames of
// steps played since the page was made (a match watched as it is played: `more`), and
// shows the last step (`latest`).
function viewMatch(frames) {
  const slider = document.getElementById("step");
  const board = document.getElementById("board");
  const label = document.getElementById("step-label");
  const moves = document.getElementById("moves");
  const caption = document.getElementById("moves-caption");
  const legend = document.getElementById("legend");
  const play = document.getElementById("play");
  // A game of imperfect information: the whole truth, or what one seat was told.
  const view = document.getElementById("view");
  const told = document.getElementById("told");
  let last = frames.length - 1;
  let timer = null;

  // What `seat` was told of each step up to `index`: its own move and its percepts.
  function showTold(seat, index) {
    const items = frames.slice(1, index + 1).map((frame) => {
      const item = document.createElement("li");
      const own = frame.told?.[seat];
      if (own === undefined) {
        item.textContent = `step ${frame.step}: not played`;
      } else {
        const seen = own.percepts.length > 0 ? own.percepts.join(" ") : "nothing";
        item.textContent = `step ${frame.step}: played ${own.move}; saw ${seen}`;
      }
      return item;
    });
    told.querySelector("ol").replaceChildren(...items);
  }

  function show(index) {
    const frame = frames[index];
    slider.value = String(index);
    label.textContent = `step ${frame.step} of ${last}`;
    const seat = view === null ? "" : view.value;
    board.hidden = legend.hidden = seat !== "";
    if (told !== null) told.hidden = seat === "";
    for (const row of moves.querySelectorAll("tbody tr")) row.hidden = seat !== "" && row.dataset.role !== seat;
    if (seat !== "") {
      showTold(seat, index);
      caption.textContent = `What ${seat} was told, step by step, up to step ${frame.step}: its own moves and what it saw, never the others' moves.`;
      for (const row of moves.querySelectorAll("tbody tr")) {
        row.querySelector(".move").textContent = frame.moves[row.dataset.role] ?? "";
      }
      return;
    }
    const pieces = piecesOf(frame.legend);
    drawFrame(board, frame, index > 0 ? frames[index - 1] : null, pieces);
    drawLegend(legend, frame.legend, pieces);
    let what = index === 0 ? "The start position: no move played yet." : `The moves of step ${frame.step}, which led to this position.`;
    if (!frame.played) what = `Step ${frame.step} was not played: a fault ended the match while it was asked. The position it was asked in.`;
    if (frame.terminal) what += " The game is over.";
    caption.textContent = what;
    for (const row of moves.querySelectorAll("tbody tr")) {
      const role = row.dataset.role;
      const fault = frame.faults.find((f) => f.role === role);
      row.querySelector(".move").textContent = frame.moves[role] ?? "";
      const time = frame.times_ms[role];
      row.querySelector(".time").textContent = time === undefined ? "" : time.toFixed(1);
      const cell = row.querySelector(".fault-cell");
      cell.textContent = fault ? `${fault.kind}: ${fault.detail}` : "";
      cell.classList.toggle("fault", Boolean(fault));
    }
  }
  function go(index) {
    const step = Math.max(0, Math.min(last, index));
    show(step);
    // Replaced, not pushed: stepping through a match leaves one entry in the history.
    if (location.hash !== `#step=${step}`) history.replaceState(null, "", `#step=${step}`);
  }
  function stop() {
    clearInterval(timer);
    timer = null;
    play.textContent = "play";
  }
  function toggle() {
    if (timer !== null) {
      stop();
      return;
    }
    if (Number(slider.value) === last) go(0);
    play.textContent = "pause";
    timer = setInterval(() => {
      if (Number(slider.value) >= last) stop();
      else go(Number(slider.value) + 1);
    }, 600);
  }
  slider.addEventListener("input", () => go(Number(slider.value)));
  document.getElementById("first").addEventListener("click", () => go(0));
  document.getElementById("previous").addEventListener("click", () => go(Number(slider.value) - 1));
  document.getElementById("next").addEventListener("click", () => go(Number(slider.value) + 1));
  document.getElementById("last").addEventListener("click", () => go(last));
  play.addEventListener("click", toggle);
  if (view !== null) view.addEventListener("change", () => show(Number(slider.value)));
  window.addEventListener("hashchange", () => show(stepOf(location.hash, last)));
  document.addEventListener("keydown", (event) => {
    const keys = {
      ArrowLeft: () => go(Number(slider.value) - 1),
      ArrowRight: () => go(Number(slider.value) + 1),
      Home: () => go(0),
      End: () => go(last),
      " ": toggle,
    };
    if (event.key in keys && event.target.tagName !== "SELECT") {
      event.preventDefault();
      keys[event.key]();
    }
  });
  // Opened without a step, the page shows the start and leaves its address alone.
  show(stepOf(location.hash, last));
  // New frames: the viewer follows them if it showed the last step, else stays where the
  // reader put it.
  function more(added) {
    const shown = Number(slider.value);
    const following = shown === last;
    frames.push(...added);
    last = frames.length - 1;
    slider.max = String(last);
    show(following ? last : shown);
  }
  return { more, latest: () => show(last) };
}

// The viewer of the page's match, once the page is loaded (null on a page with none).
let matchViewer = null;

document.addEventListener("DOMContentLoaded", () => {
  const data = document.getElementById("frames");
  if (data !== null) matchViewer = viewMatch(JSON.parse(data.textContent));
  if (document.getElementById("matches") !== null) {
    for (const id of ["filter-game", "filter-player", "filter-result"]) {
      document.getElementById(id).addEventListener("change", () => {
        matchPage = 0;
        filterMatches();
      });
    }
    for (const [id, step] of [["page-previous", -1], ["page-next", 1]]) {
      document.getElementById(id)?.addEventListener("click", () => {
        matchPage += step;
        filterMatches();
      });
    }
    filterMatches();
  }
});
