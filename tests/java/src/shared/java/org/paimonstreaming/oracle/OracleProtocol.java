package org.paimonstreaming.oracle;

import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.JsonNodeFactory;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The oracles' JSON protocol (tests/java_oracle.py drives it), shared by the oracle of Paimon
 * 1.4.2 (tests/java) and that of older releases (tests/java_legacy).
 *
 * <p>One JSON request on stdin (or in the file named by the first argument; with "--serve", one
 * request per line until stdin ends), either a single command object or {"ops": [cmd, ...]};
 * every command has "op" and "path" (the table directory). The reply, one JSON document on a
 * line of its own on stdout, is {"ok": true, "results": [r, ...]} (one result per command, in
 * order) or {"ok": false, "index": i, "error": "...", "trace": "...", "fatal": bool, "results":
 * [...]} for the first failing command ("fatal": it threw an Error). All other output of the JVM
 * (logging etc.) goes to stderr.
 */
final class OracleProtocol {

    static final JsonNodeFactory NODES = JsonNodeFactory.instance;
    static final String ROW_KIND = "_ROW_KIND";

    /** One command of a request: its result, or an exception that ends the request. */
    interface Command {
        JsonNode run(JsonNode cmd) throws Exception;
    }

    private OracleProtocol() {}

    /**
     * With "--serve" as the only argument, answers requests until stdin ends: one request per
     * line, one reply per line (a JVM kept for many requests skips the start-up of one per
     * request). Otherwise answers one request (stdin, or the file named by the first argument)
     * and exits, 1 if a command failed.
     */
    static void serve(String[] args, ObjectMapper mapper, Command command) throws Exception {
        // Keep stdout for replies only; anything the library prints goes to stderr.
        PrintStream realOut = System.out;
        System.setOut(System.err);
        if (args.length == 1 && args[0].equals("--serve")) {
            BufferedReader lines = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            for (String line = lines.readLine(); line != null; line = lines.readLine()) {
                reply(realOut, mapper, answer(mapper.readTree(line), command));
                System.err.flush();
            }
            return;
        }
        JsonNode request;
        try (InputStream in = args.length > 0 ? Files.newInputStream(java.nio.file.Path.of(args[0])) : System.in) {
            request = mapper.readTree(in);
        }
        ObjectNode reply = answer(request, command);
        reply(realOut, mapper, reply);
        System.exit(reply.get("ok").asBoolean() ? 0 : 1);
    }

    /** Runs a request's commands in order, up to the first failure. */
    private static ObjectNode answer(JsonNode request, Command command) {
        List<JsonNode> ops = new ArrayList<>();
        if (request.has("ops")) {
            request.get("ops").forEach(ops::add);
        } else {
            ops.add(request);
        }
        ObjectNode reply = NODES.objectNode();
        ArrayNode results = NODES.arrayNode();
        reply.put("ok", true);
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
                // an Error (out of memory, a stack overflow) may leave the JVM unfit for more requests
                reply.put("fatal", t instanceof Error);
                break;
            }
        }
        reply.set("results", results);
        return reply;
    }

    private static void reply(OutputStream out, ObjectMapper mapper, ObjectNode reply) throws Exception {
        out.write(mapper.writeValueAsBytes(reply));
        out.write('\n');
        out.flush();
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
