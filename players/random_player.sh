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
                n = 0
                while (match($0, /\([^()]*\)|[^ ()]+/)) {
                    moves[++n] = substr($0, RSTART, RLENGTH)
                    $0 = substr($0, RSTART + RLENGTH)
                }
                srand(seed)
                print moves[int(rand() * n) + 1]
            }'
            ;;
        quit)
            exit 0
            ;;
    esac
done
