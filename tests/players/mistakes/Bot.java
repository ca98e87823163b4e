// The smallest Java program that gets ready: the tests start it with bad flags, or by a
// class name it does not have, to see the JVM's own reason quoted.
public class Bot {
    public static void main(String[] args) throws java.io.IOException {
        var in = new java.io.BufferedReader(new java.io.InputStreamReader(System.in));
        for (String line; (line = in.readLine()) != null && !line.equals("quit"); ) {
            if (line.startsWith("start")) {
                System.out.println("ready");
                System.out.flush();
            }
        }
    }
}
