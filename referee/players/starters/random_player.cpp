// A random player in C++ (docs/protocol.md): `ready` to each `start`, one of the legal
// moves of each `go`, and gone on `quit`. Build: g++ -O2 -o random_player random_player.cpp
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

// The moves of a `go` line's list: the spaces between them are outside every parenthesis.
std::vector<std::string> moves(const std::string &list) {
    std::vector<std::string> found;
    std::string move;
    int depth = 0;
    for (char c : list + " ") {
        if (c == ' ' && depth == 0) {
            if (!move.empty()) found.push_back(move);
            move.clear();
            continue;
        }
        move += c;
        depth += (c == '(') - (c == ')');
    }
    return found;
}

int main() {
    std::mt19937 random{std::random_device{}()};
    std::string line;
    while (std::getline(std::cin, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        std::istringstream words(line);
        std::string kind, step, ms, list;
        words >> kind;
        if (kind == "start") {
            std::cout << "ready" << std::endl;  // std::endl flushes
        } else if (kind == "go" && words >> step >> ms && std::getline(words >> std::ws, list)) {
            auto legal = moves(list);
            std::cout << legal[random() % legal.size()] << std::endl;
        } else if (kind == "quit") {
            break;
        }
    }
}
