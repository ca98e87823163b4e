// A random player in Go (docs/protocol.md): `ready` to each `start`, one of the legal moves
// of each `go`, and gone on `quit`. Build: go build -o random_player random_player.go
package main

import (
	"bufio"
	"fmt"
	"math/rand"
	"os"
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
	random := rand.New(rand.NewSource(time.Now().UnixNano()))
	in := bufio.NewReader(os.Stdin)
	for {
		line, err := in.ReadString('\n')
		if err != nil {
			return
		}
		words := strings.SplitN(strings.TrimSpace(line), " ", 4)
		switch {
		case words[0] == "start":
			fmt.Println("ready") // os.Stdout is not buffered
		case words[0] == "go" && len(words) == 4:
			legal := moves(words[3])
			fmt.Println(legal[random.Intn(len(legal))])
		case words[0] == "quit":
			return
		}
	}
}
