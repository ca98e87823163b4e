#!/usr/bin/env python3
"""A GGP player as the GGP world writes them: an HTTP/1.0 server that game managers POST to.

    ggp_player.py PORTFILE [--fault KIND] [--at N] [--name NAME]

It listens on 127.0.0.1 at a free port, which it writes to PORTFILE, and answers START
(`ready`), PLAY (a random legal move), STOP (`done`), ABORT (`aborted`) and INFO, by POST
or GET, and OPTIONS. Its HTTP and KIF handling use the standard library only and follow
the protocol as ggp-base's players speak it, not the referee's code; only the legal moves
come from the referee's rule engine, as a real player has a reasoner of its own.

KIND, done at its N-th PLAY (default 1), answered normally otherwise:
  late     answers 1.5 s after the play clock
  hang     never answers, and holds the connection
  garbage  answers text that is no KIF term
  close    closes the connection without an answer
  illegal  answers a move of the game that is not legal for it now
  endless  answers with a body that never ends
  busy     answers START with busy (at every START)
"""

import argparse
import os
import random
import re
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote

from referee.games import load_text

TOKEN = re.compile(r"\(|\)|[^\s()]+")


def parse(text):
    """The KIF terms of a text: an atom is a string, a list a Python list."""
    stack = [[]]
    for token in TOKEN.findall(text):
        if token == "(":
            stack.append([])
        elif token == ")":
            if len(stack) == 1:
                raise ValueError("')' without '('")
            done = stack.pop()
            stack[-1].append(done)
        else:
            stack[-1].append(token.lower())
    if len(stack) != 1:
        raise ValueError("'(' never closed")
    return stack[0]


def show(term):
    return "(" + " ".join(show(part) for part in term) + ")" if isinstance(term, list) else term


class Player:
    def __init__(self, fault, at):
        self.fault, self.at = fault, at
        self.lock = threading.Lock()
        self.game = self.state = None
        self.role = self.plays = 0
        self.play_clock = 1

    def answer(self, message):
        """The reply to a message, or a fault's name for the handler to act out."""
        (request,) = parse(message)
        head = request[0]
        with self.lock:
            if head == "info":
                return "((name ggp_player) (status available))"
            if head == "start":
                if self.fault == "busy":
                    return "busy"
                _, _, role, rules, _, play_clock = request[:6]
                self.game = load_text(" ".join(show(rule) for rule in rules), "game.kif")
                self.role = self.game.roles.index(role)
                self.state = self.game.initial_state()
                self.plays = 0
                self.play_clock = int(play_clock)
                return "ready"
            if head == "play":
                moves = request[2]
                if moves != "nil":
                    joint = tuple(self.game.parse_move(show(move)) for move in moves)
                    self.state = self.game.next_state(self.state, joint)
                self.plays += 1
                legal = self.game.legal_moves(self.state, self.role)
                if self.fault and self.plays == self.at:
                    if self.fault == "illegal":
                        return next(m for m in self.game.all_moves() if m not in legal)
                    if self.fault == "late":
                        time.sleep(self.play_clock + 1.5)
                    else:
                        return ("fault", self.fault)
                return random.choice(legal)
            if head == "stop":
                return "done"
            if head == "abort":
                return "aborted"
        return ""


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def do_POST(self):
        length = int(self.headers.get("Content-Length", 0))
        self.respond(self.rfile.read(length).decode())

    def do_GET(self):
        self.respond(unquote(self.path[1:]))

    def do_OPTIONS(self):
        self.send("")

    def respond(self, message):
        reply = self.server.player.answer(message)
        if isinstance(reply, tuple):
            kind = reply[1]
            if kind == "hang":
                time.sleep(3600)
            elif kind == "garbage":
                self.send(")) not a term ((")
            elif kind == "close":
                self.connection.shutdown(socket.SHUT_RDWR)
            elif kind == "endless":
                self.send_response(200)
                self.send_header("Content-Type", "text/acl")
                self.end_headers()
                try:
                    while True:
                        self.wfile.write(b"x" * 65536)
                except OSError:
                    pass
            return
        self.send(reply)

    def send(self, body):
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/acl")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Access-Control-Allow-Origin", "*")
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("portfile")
    parser.add_argument("--fault", default="")
    parser.add_argument("--at", type=int, default=1)
    options = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.player = Player(options.fault, options.at)
    with open(options.portfile + ".tmp", "w") as out:
        out.write(str(server.server_address[1]))
    # Renamed into place: whoever waits for the file never reads half of it.
    os.replace(options.portfile + ".tmp", options.portfile)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
