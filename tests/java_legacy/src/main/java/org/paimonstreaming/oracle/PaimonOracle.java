package org.paimonstreaming.oracle;

import static org.paimonstreaming.oracle.OracleProtocol.NODES;
import static org.paimonstreaming.oracle.OracleProtocol.ROW_KIND;
import static org.paimonstreaming.oracle.OracleProtocol.strings;
import static org.paimonstreaming.oracle.OracleProtocol.text;

import org.apache.paimon.Snapshot;
import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.disk.IOManager;
import org.apache.paimon.fs.Path;
import org.apache.paimon.fs.local.LocalFileIO;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.schema.SchemaChange;
import org.apache.paimon.schema.SchemaManager;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.FileStoreTableFactory;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.sink.RowKeyExtractor;
import org.apache.paimon.table.sink.StreamTableCommit;
import org.apache.paimon.table.sink.TableWriteImpl;
import org.apache.paimon.table.sink.StreamTableWrite;
import org.apache.paimon.table.sink.StreamWriteBuilder;
import org.apache.paimon.table.source.DataSplit;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.types.DataTypeJsonParser;
import org.apache.paimon.types.RowKind;
import org.apache.paimon.types.RowType;
import org.apache.paimon.types.DataField;

import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

/**
 * An OLDER Apache Paimon (0.8 .. 1.3) behind the JSON protocol and value encoding of tests/java's
 * oracle ({@link OracleProtocol}, {@link ValueCodec}: tests/java/src/shared/java, compiled into
 * both), so tests/java_oracle.py's Batch drives it.
 *
 * <p>Ops (each with "op" and "path", the table directory): create, write (batch; or stream
 * with "commitUser" and "commitIdentifier"), read ("snapshotId"?, "tag"?, "incrementalBetween"?,
 * "columns"?, "withRowKind"?), snapshots, compact (full compaction of every partition and
 * bucket that has files), create-tag ("tag", "snapshotId"?), rollback ("snapshotId" or "tag"),
 * alter (changes of kind add, rename, set-option), version.
 *
 * <p>Only API that every version from 0.8 on has.
 */
public final class PaimonOracle {

    static final ObjectMapper MAPPER = new ObjectMapper();

    public static void main(String[] args) throws Exception {
        OracleProtocol.serve(args, MAPPER, PaimonOracle::run);
    }

    static JsonNode run(JsonNode cmd) throws Exception {
        String op = text(cmd, "op");
        Path path = new Path(text(cmd, "path"));
        switch (op) {
            case "create":
                return create(path, cmd);
            case "write":
                return write(path, cmd);
            case "read":
                return read(path, cmd);
            case "snapshots":
                return snapshots(path);
            case "compact":
                return compact(path);
            case "create-tag":
                {
                    FileStoreTable table = table(path);
                    if (cmd.hasNonNull("snapshotId")) {
                        table.createTag(text(cmd, "tag"), cmd.get("snapshotId").asLong());
                    } else {
                        table.createTag(text(cmd, "tag"));
                    }
                    return NODES.objectNode();
                }
            case "rollback":
                if (cmd.hasNonNull("tag")) {
                    table(path).rollbackTo(text(cmd, "tag"));
                } else {
                    table(path).rollbackTo(cmd.get("snapshotId").asLong());
                }
                return NODES.objectNode();
            case "alter":
                return alter(path, cmd);
            case "version":
                {
                    ObjectNode o = NODES.objectNode();
                    o.put("version", String.valueOf(Snapshot.class.getPackage().getImplementationVersion()));
                    return o;
                }
            default:
                throw new IllegalArgumentException("unknown op: " + op);
        }
    }

    static JsonNode create(Path path, JsonNode cmd) throws Exception {
        Schema.Builder builder = Schema.newBuilder();
        for (JsonNode field : cmd.get("fields")) {
            builder.column(text(field, "name"), DataTypeJsonParser.parseDataType(field.get("type")));
        }
        builder.primaryKey(strings(cmd.get("primaryKeys")));
        builder.partitionKeys(strings(cmd.get("partitionKeys")));
        JsonNode options = cmd.get("options");
        if (options != null && !options.isNull()) {
            Iterator<Map.Entry<String, JsonNode>> it = options.fields();
            while (it.hasNext()) {
                Map.Entry<String, JsonNode> e = it.next();
                builder.option(e.getKey(), e.getValue().asText());
            }
        }
        new SchemaManager(LocalFileIO.create(), path).createTable(builder.build());
        return NODES.objectNode();
    }

    static JsonNode alter(Path path, JsonNode cmd) throws Exception {
        List<SchemaChange> changes = new ArrayList<>();
        for (JsonNode c : cmd.get("changes")) {
            List<String> names = strings(c.get("path"));
            String name = names.get(names.size() - 1);
            switch (text(c, "kind")) {
                case "add":
                    changes.add(SchemaChange.addColumn(name, DataTypeJsonParser.parseDataType(c.get("type"))));
                    break;
                case "rename":
                    changes.add(SchemaChange.renameColumn(name, text(c, "newName")));
                    break;
                case "set-option":
                    changes.add(SchemaChange.setOption(text(c, "key"), text(c, "value")));
                    break;
                default:
                    throw new IllegalArgumentException("unknown schema change: " + text(c, "kind"));
            }
        }
        long id = new SchemaManager(LocalFileIO.create(), path).commitChanges(changes).id();
        ObjectNode out = NODES.objectNode();
        out.put("schemaId", id);
        return out;
    }

    static JsonNode write(Path path, JsonNode cmd) throws Exception {
        FileStoreTable table = table(path);
        RowType rowType = table.rowType();
        List<InternalRow> rows = new ArrayList<>();
        for (JsonNode row : cmd.get("rows")) {
            InternalRow r = ValueCodec.rowFromJson(row, rowType);
            JsonNode kind = row.get(ROW_KIND);
            if (kind != null && !kind.isNull()) {
                r.setRowKind(RowKind.fromShortString(kind.asText()));
            }
            rows.add(r);
        }
        IOManager ioManager = IOManager.create(System.getProperty("java.io.tmpdir"));
        try {
            if (cmd.hasNonNull("commitUser")) {
                long identifier = cmd.get("commitIdentifier").asLong();
                StreamWriteBuilder builder = table.newStreamWriteBuilder().withCommitUser(text(cmd, "commitUser"));
                List<CommitMessage> messages;
                try (StreamTableWrite w = builder.newWrite()) {
                    w.withIOManager(ioManager);
                    for (InternalRow r : rows) {
                        w.write(r);
                    }
                    messages = w.prepareCommit(true, identifier);
                }
                try (StreamTableCommit c = builder.newCommit()) {
                    c.commit(identifier, messages);
                }
            } else {
                BatchWriteBuilder builder = table.newBatchWriteBuilder();
                List<CommitMessage> messages;
                try (BatchTableWrite w = builder.newWrite()) {
                    w.withIOManager(ioManager);
                    Bucketing bucketing = Bucketing.of(table);
                    for (InternalRow r : rows) {
                        if (bucketing == null) {
                            w.write(r);
                        } else {
                            ((TableWriteImpl<?>) w).write(r, bucketing.bucket(r));
                        }
                    }
                    messages = w.prepareCommit();
                }
                try (BatchTableCommit c = builder.newCommit()) {
                    c.commit(messages);
                }
            }
        } finally {
            ioManager.close();
        }
        return NODES.objectNode();
    }

    static JsonNode read(Path path, JsonNode cmd) throws Exception {
        FileStoreTable table = table(path);
        Map<String, String> dynamic = new HashMap<>();
        if (cmd.hasNonNull("snapshotId")) {
            dynamic.put("scan.snapshot-id", cmd.get("snapshotId").asText());
        }
        if (cmd.hasNonNull("tag")) {
            dynamic.put("scan.tag-name", cmd.get("tag").asText());
        }
        if (cmd.hasNonNull("incrementalBetween")) {
            dynamic.put("incremental-between", cmd.get("incrementalBetween").asText());
        }
        if (!dynamic.isEmpty()) {
            table = table.copy(dynamic);
        }
        ReadBuilder rb = table.newReadBuilder();
        RowType readType = table.rowType();
        if (cmd.hasNonNull("columns")) {
            List<String> names = strings(cmd.get("columns"));
            int[] projection = new int[names.size()];
            for (int i = 0; i < projection.length; i++) {
                projection[i] = table.rowType().getFieldIndex(names.get(i));
                if (projection[i] < 0) {
                    throw new IllegalArgumentException("no such column: " + names.get(i));
                }
            }
            rb = rb.withProjection(projection);
            readType = table.rowType().project(projection);
        }
        boolean withKind = cmd.path("withRowKind").asBoolean(false);
        List<Split> splits = rb.newScan().plan().splits();
        ArrayNode out = NODES.arrayNode();
        final RowType type = readType;
        try (RecordReader<InternalRow> reader = rb.newRead().createReader(splits)) {
            reader.forEachRemaining(
                    row -> {
                        ObjectNode o = ValueCodec.rowToJson(row, type);
                        if (withKind) {
                            o.put(ROW_KIND, row.getRowKind().shortString());
                        }
                        out.add(o);
                    });
        }
        ObjectNode result = NODES.objectNode();
        // the row type read, as {"name", "type": SQL type text} (tests/java_oracle.py parses it)
        ArrayNode fields = NODES.arrayNode();
        for (DataField f : readType.getFields()) {
            ObjectNode o = NODES.objectNode();
            o.put("name", f.name());
            o.put("type", f.type().asSQLString());
            fields.add(o);
        }
        result.set("fields", fields);
        result.set("rows", out);
        return result;
    }

    static JsonNode snapshots(Path path) throws Exception {
        FileStoreTable table = table(path);
        List<Snapshot> list = new ArrayList<>();
        Iterator<Snapshot> it = table.snapshotManager().snapshots();
        while (it.hasNext()) {
            list.add(it.next());
        }
        list.sort((a, b) -> Long.compare(a.id(), b.id()));
        ArrayNode arr = NODES.arrayNode();
        for (Snapshot s : list) {
            ObjectNode o = NODES.objectNode();
            o.put("id", s.id());
            o.put("schemaId", s.schemaId());
            o.put("commitUser", s.commitUser());
            o.put("commitIdentifier", s.commitIdentifier());
            o.put("commitKind", s.commitKind().name());
            o.put("timeMillis", s.timeMillis());
            arr.add(o);
        }
        ObjectNode result = NODES.objectNode();
        result.set("snapshots", arr);
        return result;
    }

    /** Full compaction of every (partition, bucket) that has files. */
    static JsonNode compact(Path path) throws Exception {
        FileStoreTable table = table(path);
        Set<List<Object>> seen = new LinkedHashSet<>();
        List<BinaryRow> partitions = new ArrayList<>();
        List<Integer> buckets = new ArrayList<>();
        for (Split split : table.newReadBuilder().newScan().plan().splits()) {
            DataSplit ds = (DataSplit) split;
            if (seen.add(List.of(ds.partition(), ds.bucket()))) {
                partitions.add(ds.partition());
                buckets.add(ds.bucket());
            }
        }
        if (!partitions.isEmpty()) {
            BatchWriteBuilder builder = table.newBatchWriteBuilder();
            IOManager ioManager = IOManager.create(System.getProperty("java.io.tmpdir"));
            List<CommitMessage> messages;
            try (BatchTableWrite w = builder.newWrite()) {
                w.withIOManager(ioManager);
                for (int i = 0; i < partitions.size(); i++) {
                    w.compact(partitions.get(i), buckets.get(i), true);
                }
                messages = w.prepareCommit();
            } finally {
                ioManager.close();
            }
            try (BatchTableCommit c = builder.newCommit()) {
                c.commit(messages);
            }
        }
        ObjectNode result = NODES.objectNode();
        result.put("compacted", partitions.size());
        return result;
    }

    /**
     * Buckets of a dynamic-bucket primary-key table: before 1.4 the table writer does not assign
     * them itself (Flink's and Spark's sinks run a HashBucketAssigner ahead of it); its
     * constructor gained a parameter (max buckets) in 1.1, hence the reflection.
     */
    static final class Bucketing {
        final RowKeyExtractor extractor;
        final Object assigner;
        final java.lang.reflect.Method assign;

        private Bucketing(RowKeyExtractor extractor, Object assigner) throws Exception {
            this.extractor = extractor;
            this.assigner = assigner;
            this.assign = assigner.getClass().getMethod("assign", BinaryRow.class, int.class);
        }

        static Bucketing of(FileStoreTable table) throws Exception {
            if (table.coreOptions().bucket() != -1 || table.primaryKeys().isEmpty()) {
                return null;
            }
            Class<?> cls = Class.forName("org.apache.paimon.index.HashBucketAssigner");
            long target = table.coreOptions().dynamicBucketTargetRowNum();
            Object index = table.store().getClass().getMethod("newIndexFileHandler").invoke(table.store());
            for (java.lang.reflect.Constructor<?> c : cls.getConstructors()) {
                Object[] args;
                if (c.getParameterCount() == 7) {
                    args = new Object[] {table.snapshotManager(), UUID.randomUUID().toString(), index, 1, 1, 0, target};
                } else if (c.getParameterCount() == 8) {
                    args = new Object[] {table.snapshotManager(), UUID.randomUUID().toString(), index, 1, 1, 0, target, -1};
                } else {
                    continue;
                }
                return new Bucketing(table.createRowKeyExtractor(), c.newInstance(args));
            }
            throw new IllegalStateException("no HashBucketAssigner constructor this program knows");
        }

        int bucket(InternalRow row) throws Exception {
            extractor.setRecord(row);
            return (Integer) assign.invoke(assigner, extractor.partition(), extractor.trimmedPrimaryKey().hashCode());
        }
    }

    static FileStoreTable table(Path path) {
        return FileStoreTableFactory.create(LocalFileIO.create(), path);
    }
}
