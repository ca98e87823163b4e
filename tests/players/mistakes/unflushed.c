/* A bot as a beginner writes it in C: right, but it never flushes standard output.
 * Writing to a pipe, stdio keeps its lines in a buffer until the buffer is full or the
 * program exits. Built with -DFLUSH it calls fflush after each line, and plays well. */
#include <stdio.h>
#include <string.h>

static void answer(const char *text) {
    printf("%s\n", text);
#ifdef FLUSH
    fflush(stdout);
#endif
}

int main(void) {
    static char line[1 << 17];
    while (fgets(line, sizeof line, stdin)) {
        if (strncmp(line, "start ", 6) == 0) {
            answer("ready");
        } else if (strncmp(line, "go ", 3) == 0) {
            /* go STEP MS MOVE...: answer the first legal move. */
            char *move = line;
            for (int words = 0; words < 3 && move; words++) {
                move = strchr(move, ' ');
                if (move) move++;
            }
            if (!move) continue;
            size_t length = *move == '(' ? strcspn(move, ")") + 1 : strcspn(move, " \n");
            move[length] = '\0';
            answer(move);
        } else if (strncmp(line, "quit", 4) == 0) {
            break;
        }
    }
    return 0;
}
