// A random player in Rust (docs/protocol.md): `ready` to each `start`, one of the legal
// moves of each `go`, and gone on `quit`. Build: rustc -O -o random_player random_player.rs
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::io::{self, BufRead, Write};

/// The moves of a `go` line's list: the spaces between them are outside every parenthesis.
fn moves(list: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let (mut depth, mut begin) = (0, 0);
    for (i, c) in list.char_indices().chain([(list.len(), ' ')]) {
        match c {
            ' ' if depth == 0 => {
                if i > begin {
                    found.push(&list[begin..i]);
                }
                begin = i + 1;
            }
            '(' => depth += 1,
            ')' => depth -= 1,
            _ => {}
        }
    }
    found
}

fn main() {
    // The standard library's random hash keys, for a random number without a crate.
    let random = RandomState::new();
    let mut out = io::stdout();
    for line in io::stdin().lock().lines() {
        let line = line.expect("standard input");
        let words: Vec<&str> = line.trim().splitn(4, ' ').collect();
        match words[0] {
            "start" => writeln!(out, "ready").unwrap(),
            "go" if words.len() == 4 => {
                let legal = moves(words[3]);
                let mut hasher = random.build_hasher();
                hasher.write(line.as_bytes()); // each `go` line has its own step
                writeln!(out, "{}", legal[hasher.finish() as usize % legal.len()]).unwrap();
            }
            "quit" => break,
            _ => {}
        }
        out.flush().unwrap();
    }
}
