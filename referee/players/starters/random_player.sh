#!/bin/sh
# A random player in POSIX shell: any language that reads and writes lines can play.
while IFS= read -r line; do
    case "$line" in
        start\ *)
            echo ready
            ;;
        go\ *)
            # Drop "go <step> <ms> ", then pick one of the moves at random with awk.
            seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
            printf '%s\n' "$line" | awk -v seed="$seed" '{
                sub(/^go [0-9]+ [0-9]+ /, "")
                # A move is an atom or a list, with lists in it as deep as they go: the
                # spaces that part the moves are those outside every parenthesis.
                n = depth = 0
                move = ""
                for (i = 1; i <= length($0); i++) {
                    c = substr($0, i, 1)
                    if (c == " " && depth == 0) {
                        if (move != "") moves[++n] = move
                        move = ""
                        continue
                    }
                    move = move c
                    if (c == "(") depth++
                    if (c == ")") depth--
                }
                if (move != "") moves[++n] = move
                srand(seed)
                print moves[int(rand() * n) + 1]
            }'
            ;;
        quit)
            exit 0
            ;;
    esac
done
