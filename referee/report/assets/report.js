"use strict";

// The index: show the matches that pass every filter.
function filterMatches() {
  const game = document.getElementById("filter-game").value;
  const player = document.getElementById("filter-player").value;
  const result = document.getElementById("filter-result").value;
  let shown = 0;
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
    row.hidden = !keep;
    shown += keep ? 1 : 0;
  }
  document.getElementById("shown").textContent = String(shown);
}

// Boards as SVG, from the cells' symbols: X and O (x and o) a role's pieces, # a blocker's
// cell, W a white blocker, . an empty cell, a space no cell at all; any other symbol (a GDL
// game's) is written in its cell.
const CELL = 34;
const MARGIN = 26;
const PIECES = { X: "first", x: "first", O: "second", o: "second", W: "white" };

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

function drawBoard(board) {
  const rows = board.rows.length;
  const columns = board.columns.length;
  const rise = board.hexagonal ? CELL * 0.87 : CELL;
  const shift = board.hexagonal ? CELL / 2 : 0;
  const centre = (r, c) => [MARGIN + c * CELL + r * shift + CELL / 2, MARGIN + r * rise + CELL / 2];
  // A hexagon reaches further below its centre than a square does.
  const below = board.hexagonal ? CELL / Math.sqrt(3) : CELL / 2;
  const width = MARGIN + columns * CELL + (rows - 1) * shift + 4;
  const height = centre(rows - 1, 0)[1] + below + 4;
  let parts = "";
  board.columns.forEach((label, c) => {
    parts += svgElement("text", { x: MARGIN + c * CELL + CELL / 2, y: MARGIN - 8, class: "label" }, escapeText(label));
  });
  board.rows.forEach(([label, cells], r) => {
    const [, y] = centre(r, 0);
    parts += svgElement("text", { x: MARGIN + r * shift - 6, y: y + 4, class: "label row" }, escapeText(label));
    cells.forEach((symbol, c) => {
      if (symbol === " ") return;
      const [x, yc] = centre(r, c);
      const kind = symbol === "#" ? "cell blocked" : "cell";
      let shape = board.hexagonal
        ? svgElement("polygon", { points: hexagon(x, yc), class: kind })
        : svgElement("rect", { x: x - CELL / 2, y: yc - CELL / 2, width: CELL, height: CELL, class: kind });
      if (symbol in PIECES) {
        shape += svgElement("circle", { cx: x, cy: yc, r: CELL * 0.34, class: `piece ${PIECES[symbol]}` });
      } else if (symbol !== "." && symbol !== "#") {
        // A GDL game's own word for what is there.
        shape += svgElement("text", { x, y: yc + 4, class: "word" }, escapeText(symbol));
      }
      const place = { class: "square", "data-row": label, "data-column": board.columns[c], "data-mark": symbol };
      parts += svgElement("g", place, `<title>${escapeText(`${label} ${board.columns[c]}: ${symbol}`)}</title>${shape}`);
    });
  });
  const svg = svgElement("svg", { xmlns: "http://www.w3.org/2000/svg", width, height, viewBox: `0 0 ${width} ${height}`, class: "board" }, parts);
  return `<figure>${svg}<figcaption>${escapeText(board.title)}</figcaption></figure>`;
}

// What a frame shows: its boards drawn, with the text the terminal shows beneath; a game
// without boards of its own (GDL) shows its text.
function drawFrame(frame) {
  const text = `<pre class="board">${escapeText(frame.board)}</pre>`;
  if (frame.boards.length === 0) return text;
  const drawn = frame.boards.map(drawBoard).join("");
  return `<div class="boards">${drawn}</div><details><summary>as text</summary>${text}</details>`;
}

// A match page: one frame per step, moved through by the slider, the buttons and the keys.
function viewMatch(frames) {
  const slider = document.getElementById("step");
  const board = document.getElementById("board");
  const label = document.getElementById("step-label");
  const moves = document.getElementById("moves");
  const play = document.getElementById("play");
  let timer = null;

  function show(index) {
    const frame = frames[index];
    slider.value = String(index);
    label.textContent = `step ${frame.step} of ${frames.length - 1}`;
    board.innerHTML = drawFrame(frame);
    for (const row of moves.querySelectorAll("tbody tr")) {
      const role = row.dataset.role;
      const fault = frame.faults.find((f) => f.role === role);
      row.querySelector(".move").textContent = frame.moves[role] ?? "";
      const time = frame.times_ms[role];
      row.querySelector(".time").textContent = time === undefined ? "" : time.toFixed(1);
      const cell = row.querySelector(".fault-cell");
      cell.textContent = fault ? fault.kind : "";
      cell.classList.toggle("fault", Boolean(fault));
    }
  }
  function go(index) {
    show(Math.max(0, Math.min(frames.length - 1, index)));
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
    if (Number(slider.value) === frames.length - 1) go(0);
    play.textContent = "pause";
    timer = setInterval(() => {
      if (Number(slider.value) >= frames.length - 1) stop();
      else go(Number(slider.value) + 1);
    }, 600);
  }
  slider.addEventListener("input", () => go(Number(slider.value)));
  document.getElementById("first").addEventListener("click", () => go(0));
  document.getElementById("previous").addEventListener("click", () => go(Number(slider.value) - 1));
  document.getElementById("next").addEventListener("click", () => go(Number(slider.value) + 1));
  document.getElementById("last").addEventListener("click", () => go(frames.length - 1));
  play.addEventListener("click", toggle);
  document.addEventListener("keydown", (event) => {
    const keys = {
      ArrowLeft: () => go(Number(slider.value) - 1),
      ArrowRight: () => go(Number(slider.value) + 1),
      Home: () => go(0),
      End: () => go(frames.length - 1),
      " ": toggle,
    };
    if (event.key in keys && event.target.tagName !== "SELECT") {
      event.preventDefault();
      keys[event.key]();
    }
  });
  go(0);
}

document.addEventListener("DOMContentLoaded", () => {
  const data = document.getElementById("frames");
  if (data !== null) viewMatch(JSON.parse(data.textContent));
  if (document.getElementById("matches") !== null) {
    for (const id of ["filter-game", "filter-player", "filter-result"]) {
      document.getElementById(id).addEventListener("change", filterMatches);
    }
    filterMatches();
  }
});
