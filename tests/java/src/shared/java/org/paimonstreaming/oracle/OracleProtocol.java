package org.paimonstreaming.oracle;

import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.JsonNodeFactory;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The oracles' JSON protocol (tests/java_oracle.py drives it), shared by the oracle of Paimon
 * 1.4.2 (tests/java) and that of older releases (tests/java_legacy).
 *
 * <p>One JSON request on stdin (or in the file named by the first argument), either a single
 * command object or {"ops": [cmd, ...]}; every command has "op" and "path" (the table
 * directory). The reply, written to stdout as one JSON document, is {"ok": true, "results": [r,
 * ...]} (one result per command, in order) or {"ok": false, "index": i, "error": "...", "trace":
 * "..."} for the first failing command. All other output of the JVM (logging etc.) goes to
 * stderr.
 */
final class OracleProtocol {

    static final JsonNodeFactory NODES = JsonNodeFactory.instance;
    static final String ROW_KIND = "_ROW_KIND";

    /** One command of a request: its result, or an exception that ends the request. */
    interface Command {
        JsonNode run(JsonNode cmd) throws Exception;
    }

    private OracleProtocol() {}

    /** Answers one request with `command` and exits (1 if a command failed). */
    static void serve(String[] args, ObjectMapper mapper, Command command) throws Exception {
        // Keep stdout for the reply only; anything the library prints goes to stderr.
        PrintStream realOut = System.out;
        System.setOut(System.err);

        JsonNode request;
        try (InputStream in = args.length > 0 ? Files.newInputStream(java.nio.file.Path.of(args[0])) : System.in) {
            request = mapper.readTree(in);
        }
        List<JsonNode> ops = new ArrayList<>();
        if (request.has("ops")) {
            request.get("ops").forEach(ops::add);
        } else {
            ops.add(request);
        }

        ObjectNode reply = NODES.objectNode();
        ArrayNode results = NODES.arrayNode();
        int exit = 0;
        for (int i = 0; i < ops.size(); i++) {
            try {
                results.add(command.run(ops.get(i)));
            } catch (Throwable t) {
                StringWriter sw = new StringWriter();
                t.printStackTrace(new PrintWriter(sw));
                reply.put("ok", false);
                reply.put("index", i);
                reply.put("error", String.valueOf(t));
                reply.put("trace", sw.toString());
                exit = 1;
                break;
            }
        }
        if (exit == 0) {
            reply.put("ok", true);
        }
        reply.set("results", results);
        byte[] bytes = mapper.writeValueAsBytes(reply);
        OutputStream out = realOut;
        out.write(bytes);
        out.write('\n');
        out.flush();
        System.exit(exit);
    }

    static String text(JsonNode node, String name) {
        JsonNode v = node.get(name);
        if (v == null || v.isNull()) {
            throw new IllegalArgumentException("missing '" + name + "' in " + node);
        }
        return v.asText();
    }

    static List<String> strings(JsonNode node) {
        List<String> out = new ArrayList<>();
        if (node != null && !node.isNull()) {
            node.forEach(n -> out.add(n.asText()));
        }
        return out;
    }

    static Map<String, String> stringMap(JsonNode node) {
        if (node == null || node.isNull()) {
            return null;
        }
        Map<String, String> out = new HashMap<>();
        node.fields().forEachRemaining(e -> out.put(e.getKey(), e.getValue().asText()));
        return out;
    }
}
