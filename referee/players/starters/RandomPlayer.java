// A random player in Java (docs/protocol.md): `ready` to each `start`, one of the legal
// moves of each `go`, and gone on `quit`. Build: javac -d out RandomPlayer.java; run:
// java -cp out RandomPlayer
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

public class RandomPlayer {
    /** The moves of a `go` line's list: the spaces between them are outside every parenthesis. */
    static List<String> moves(String text) {
        List<String> found = new ArrayList<>();
        StringBuilder move = new StringBuilder();
        int depth = 0;
        for (char c : (text.trim() + " ").toCharArray()) {
            if (c == ' ' && depth == 0) {
                if (move.length() > 0) found.add(move.toString());
                move.setLength(0);
                continue;
            }
            move.append(c);
            depth += c == '(' ? 1 : c == ')' ? -1 : 0;
        }
        return found;
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Random random = new Random();
        String line;
        while ((line = in.readLine()) != null) {
            String[] words = line.trim().split("\\s+", 4);
            if (words[0].equals("start")) {
                System.out.println("ready");
            } else if (words[0].equals("go") && words.length == 4) {
                List<String> legal = moves(words[3]);
                System.out.println(legal.get(random.nextInt(legal.size())));
            } else if (words[0].equals("quit")) {
                break;
            }
            System.out.flush();
        }
    }
}
