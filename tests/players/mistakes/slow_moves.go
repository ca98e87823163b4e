// A bot that thinks too long, tests/players/mistakes/slow_moves.py in Go: it answers `go`
// after SHARE times the time the line gives it, at its moves numbered MOVE in each match
// (every move when none is given), and at once at the others.
//
//	slow_moves SHARE [MOVE ...]
package main

import (
	"bufio"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"time"
)

// moves are the moves of a `go` line's list: the spaces between them are outside every
// parenthesis.
func moves(list string) []string {
	var found []string
	depth, begin := 0, 0
	for i, c := range list + " " {
		if c == ' ' && depth == 0 {
			if i > begin {
				found = append(found, list[begin:i])
			}
			begin = i + 1
			continue
		}
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		}
	}
	return found
}

func main() {
	share, err := strconv.ParseFloat(os.Args[1], 64)
	if err != nil {
		panic(err)
	}
	slow := map[int]bool{}
	for _, word := range os.Args[2:] {
		number, err := strconv.Atoi(word)
		if err != nil {
			panic(err)
		}
		slow[number] = true
	}
	in := bufio.NewReader(os.Stdin)
	moved := 0
	for {
		line, err := in.ReadString('\n')
		if err != nil {
			return
		}
		words := strings.SplitN(strings.TrimSpace(line), " ", 4)
		switch words[0] {
		case "start":
			moved = 0
			fmt.Println("ready")
		case "go":
			moved++
			if len(slow) == 0 || slow[moved] {
				ms, _ := strconv.Atoi(words[2])
				time.Sleep(time.Duration(share * float64(ms) * float64(time.Millisecond)))
			}
			legal := moves(words[3])
			fmt.Println(legal[rand.Intn(len(legal))])
		case "quit":
			return
		}
	}
}
