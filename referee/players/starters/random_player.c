// A random player in C (docs/protocol.md): `ready` to each `start`, one of the legal moves
// of each `go`, and gone on `quit`. Build: cc -O2 -o random_player random_player.c
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

// Writes the n-th move of a `go` line's list (the moves are parted by the spaces outside
// every parenthesis); returns how many moves there are.
static int move(const char *list, int n, FILE *out) {
    int count = 0, depth = 0, inside = 0;
    for (const char *c = list; *c && *c != '\n'; c++) {
        if (*c == ' ' && depth == 0) {
            inside = 0;
            continue;
        }
        if (!inside) count++, inside = 1;
        if (count - 1 == n && out) fputc(*c, out);
        depth += (*c == '(') - (*c == ')');
    }
    return count;
}

int main(void) {
    char *line = NULL;
    size_t size = 0;
    srand((unsigned)time(NULL) ^ (unsigned)getpid());
    while (getline(&line, &size, stdin) != -1) {
        int step, ms, skip = 0;
        if (strncmp(line, "start ", 6) == 0) {
            puts("ready");
        } else if (sscanf(line, "go %d %d %n", &step, &ms, &skip) == 2 && skip > 0) {
            move(line + skip, rand() % move(line + skip, -1, NULL), stdout);
            putchar('\n');
        } else if (strncmp(line, "quit", 4) == 0) {
            break;
        }
        fflush(stdout);
    }
    free(line);
    return 0;
}
