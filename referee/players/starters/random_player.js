// A random player in JavaScript for Node (docs/protocol.md): `ready` to each `start`, one of
// the legal moves of each `go`, and gone on `quit`. Run: node random_player.js
const readline = require("node:readline");

// The moves of a `go` line's list: the spaces between them are outside every parenthesis.
function moves(list) {
  const found = [];
  let depth = 0;
  let move = "";
  for (const c of list + " ") {
    if (c === " " && depth === 0) {
      if (move) found.push(move);
      move = "";
      continue;
    }
    move += c;
    depth += (c === "(") - (c === ")");
  }
  return found;
}

const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on("line", (line) => {
  const words = line.trim().split(" ");
  if (words[0] === "start") {
    process.stdout.write("ready\n"); // writes to a pipe are synchronous on Linux: no flush
  } else if (words[0] === "go" && words.length > 3) {
    const legal = moves(words.slice(3).join(" "));
    process.stdout.write(legal[Math.floor(Math.random() * legal.length)] + "\n");
  } else if (words[0] === "quit") {
    process.exit(0);
  }
});
