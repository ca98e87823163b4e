// A Java player that keeps the MiB of its first argument live from the start and makes
// 64 MiB of garbage before each move: the JVM must collect within the seat's memory.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.List;

public class Keeper {
    static final int MIB = 1024 * 1024;

    public static void main(String[] args) throws Exception {
        List<byte[]> live = new ArrayList<>();
        // In blocks of 16 KiB: a block of a MiB would take two of the heap's regions.
        for (int i = 0; i < Integer.parseInt(args[0]) * 64; i++) {
            byte[] block = new byte[MIB / 64];
            java.util.Arrays.fill(block, (byte) i);  // touched, not only reserved
            live.add(block);
        }
        long sum = 0;
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            String[] words = line.split(" ");
            if (words[0].equals("start")) {
                System.out.println("ready");
            } else if (words[0].equals("go")) {
                for (int i = 0; i < 64; i++) {
                    byte[] garbage = new byte[MIB];
                    garbage[i] = 1;
                    sum += garbage[i * 7 % MIB] + live.get(i % live.size())[0];
                }
                // The first legal move: an atom, or a list up to its first closing parenthesis.
                String move = words[3].startsWith("(") ? line.substring(line.indexOf('(', 3), line.indexOf(')') + 1) : words[3];
                System.out.println(move);
            } else if (words[0].equals("quit")) {
                break;
            }
            System.out.flush();
        }
        System.err.println("kept " + live.size() / 64 + " MiB, " + sum);
    }
}
