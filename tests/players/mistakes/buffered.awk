# A bot in awk that flushes each line it writes, but mawk reads its input in blocks: without
# -W interactive it waits for 4 KiB or the input's end, and never sees `start` in time.
$1 == "start" { print "ready"; fflush() }
$1 == "go" {
    moves = $0
    sub(/^go [0-9]+ [0-9]+ /, "", moves)
    if (substr(moves, 1, 1) == "(") move = substr(moves, 1, index(moves, ")"))
    else { split(moves, words, " "); move = words[1] }
    print move
    fflush()
}
$1 == "quit" { exit }
