package org.paimonstreaming.oracle;

import static org.paimonstreaming.oracle.OracleProtocol.NODES;
import static org.paimonstreaming.oracle.OracleProtocol.ROW_KIND;
import static org.paimonstreaming.oracle.OracleProtocol.stringMap;
import static org.paimonstreaming.oracle.OracleProtocol.strings;
import static org.paimonstreaming.oracle.OracleProtocol.text;

import org.apache.paimon.Snapshot;
import org.apache.paimon.append.AppendCompactCoordinator;
import org.apache.paimon.append.AppendCompactTask;
import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.disk.IOManager;
import org.apache.paimon.io.CompactIncrement;
import org.apache.paimon.io.DataFileMeta;
import org.apache.paimon.io.DataIncrement;
import org.apache.paimon.operation.AbstractFileStoreWrite;
import org.apache.paimon.table.sink.CommitMessageImpl;
import org.apache.paimon.table.sink.TableWriteImpl;
import org.apache.paimon.utils.RecordWriter;
import org.apache.paimon.fs.Path;
import org.apache.paimon.fs.local.LocalFileIO;
import org.apache.paimon.operation.BaseAppendFileStoreWrite;
import org.apache.paimon.predicate.Predicate;
import org.apache.paimon.predicate.PredicateBuilder;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.schema.SchemaChange;
import org.apache.paimon.schema.SchemaManager;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.FileStoreTableFactory;
import org.apache.paimon.table.SpecialFields;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.sink.RowKeyExtractor;
import org.apache.paimon.table.sink.StreamTableCommit;
import org.apache.paimon.table.sink.StreamTableWrite;
import org.apache.paimon.table.sink.StreamWriteBuilder;
import org.apache.paimon.table.sink.TableCommitImpl;
import org.apache.paimon.table.source.DataSplit;
import org.apache.paimon.table.source.EndOfScanException;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.table.source.StreamTableScan;
import org.apache.paimon.table.system.RowTrackingTable;
import org.apache.paimon.table.system.SystemTableLoader;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypeJsonParser;
import org.apache.paimon.types.RowKind;
import org.apache.paimon.types.RowType;
import org.apache.paimon.utils.JsonSerdeUtil;

import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;

/**
 * Test oracle around Apache Paimon's Java library.
 *
 * <p>Protocol: {@link OracleProtocol} (src/shared/java, shared with tests/java_legacy).
 *
 * <p>Commands:
 *
 * <ul>
 *   <li>create: {"fields": [{"name", "type"}], "primaryKeys", "partitionKeys", "options"} -> {}
 *   <li>write: {"rows": [row...], "commitUser"?, "commitIdentifier"?, "overwrite"?, "pauseBeforeCommit"?} -> {}
 *   <li>read: {"snapshotId"?, "tag"?, "options"?, "streamPlans"?, "catchError"?, "columns"?, "withRowKind"?, "where"?, "systemTable"?} -> {"fields": [field...],
 *       "rows": [row...]} where fields is the row type read, as in schema files
 *   <li>snapshots: {} -> {"snapshots": [...]}
 *   <li>compact: {"full"?: default true, "options"?, "pauseBeforeCommit"?} -> {"compacted": n}
 *   <li>buckets: {"rows": [...]} -> {"buckets": [int...]}
 *   <li>create-tag: {"tag", "snapshotId"?} -> {}
 *   <li>write-columns: {"firstRowId", "columns", "rows"} -> {} (data-evolution tables)
 *   <li>write-dynamic: as write, on a dynamic-bucket table ('bucket' = '-1'), buckets assigned as
 *       Java's Flink sinks do ({@link DynamicBucketWrite}) -> {"written": [row + "_BUCKET"...]}
 *   <li>expire: {"options"?} -> {"expired": n} (snapshot then, when decoupled, changelog
 *       expiration under the table's options overridden by "options", as after a commit)
 *   <li>rollback-to: {"snapshotId"} or {"tag"} -> {}
 *   <li>delete-tag: {"tag"} -> {}; delete-branch: {"branch"} -> {}
 *   <li>remove-orphan-files: {"olderThanMillis"} -> {"deleted": [path...]}
 *   <li>expire-partitions: {"expirationTime"} -> {"expired": [{key: value}...]}
 *   <li>tags: {} -> {"tags": {name: snapshotId}}; record-consumer: {"consumerId", "nextSnapshot"?}
 *       -> {} (no nextSnapshot: delete the consumer)
 * </ul>
 *
 * <p>Rows are JSON objects by field name; values use the encoding of {@link ValueCodec}. An
 * optional "_ROW_KIND" member ("+I", "-U", "+U", "-D") sets the row kind when writing.
 */
public final class PaimonOracle {

    static final ObjectMapper MAPPER = JsonSerdeUtil.OBJECT_MAPPER_INSTANCE;

    public static void main(String[] args) throws Exception {
        ValueCodec.extension = new VariantCodec();
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
            case "write-dynamic":
                return DynamicBucketWrite.write(table(path), cmd);
            case "read":
                if (cmd.path("catchError").asBoolean(false)) {
                    // {"catchError": true}: Java's refusal as a result ({"error": message}), so a
                    // batch of reads goes on past it
                    try {
                        return read(path, cmd);
                    } catch (Exception e) {
                        ObjectNode refused = NODES.objectNode();
                        refused.put("error", String.valueOf(e));
                        return refused;
                    }
                }
                return read(path, cmd);
            case "snapshots":
                return snapshots(path);
            case "compact":
                return compact(path, cmd);
            case "buckets":
                return buckets(path, cmd);
            case "create-tag":
                return createTag(path, cmd);
            case "create-branch":
                return createBranch(path, cmd);
            case "fast-forward":
                table(path).fastForward(text(cmd, "branch"));
                return NODES.objectNode();
            case "alter":
                return alter(path, cmd);
            case "write-columns":
                return writeColumns(path, cmd);
            case "expire":
                return expire(path, cmd);
            case "rollback-to":
                return rollbackTo(path, cmd);
            case "delete-tag":
                table(path).deleteTag(text(cmd, "tag"));
                return NODES.objectNode();
            case "delete-branch":
                table(path).deleteBranch(text(cmd, "branch"));
                return NODES.objectNode();
            case "remove-orphan-files":
                return removeOrphanFiles(path, cmd);
            case "expire-partitions":
                return expirePartitions(path, cmd);
            case "tags":
                return tags(path);
            case "record-consumer":
                return recordConsumer(path, cmd);
            default:
                throw new IllegalArgumentException("unknown op: " + op);
        }
    }

    // ------------------------------------------------------------------ commands

    static JsonNode create(Path path, JsonNode cmd) throws Exception {
        Schema.Builder builder = Schema.newBuilder();
        for (JsonNode field : cmd.get("fields")) {
            DataType type = DataTypeJsonParser.parseDataType(field.get("type"));
            String description = field.hasNonNull("description") ? field.get("description").asText() : null;
            String defaultValue = field.hasNonNull("defaultValue") ? field.get("defaultValue").asText() : null;
            builder.column(text(field, "name"), type, description, defaultValue);
        }
        builder.primaryKey(strings(cmd.get("primaryKeys")));
        builder.partitionKeys(strings(cmd.get("partitionKeys")));
        JsonNode options = cmd.get("options");
        if (options != null && !options.isNull()) {
            Iterator<Map.Entry<String, JsonNode>> it = options.fields();
            while (it.hasNext()) {
                Map.Entry<String, JsonNode> e = it.next();
                builder.option(e.getKey(), e.getValue().isTextual() ? e.getValue().asText() : e.getValue().toString());
            }
        }
        new SchemaManager(LocalFileIO.create(), path).createTable(builder.build());
        return NODES.objectNode();
    }

    /** Schema changes through Paimon's own SchemaManager: each {"kind": ..., "path": [names], ...}. */
    static JsonNode alter(Path path, JsonNode cmd) throws Exception {
        List<SchemaChange> changes = new ArrayList<>();
        for (JsonNode c : cmd.get("changes")) {
            String kind = text(c, "kind");
            String[] names = strings(c.get("path")).toArray(new String[0]);
            switch (kind) {
                case "add":
                    DataType type = DataTypeJsonParser.parseDataType(c.get("type"));
                    SchemaChange.Move move = c.hasNonNull("after")
                            ? SchemaChange.Move.after(names[names.length - 1], c.get("after").asText()) : null;
                    changes.add(SchemaChange.addColumn(names, type, null, move));
                    break;
                case "rename":
                    changes.add(SchemaChange.renameColumn(names, text(c, "newName")));
                    break;
                case "drop":
                    changes.add(SchemaChange.dropColumn(names));
                    break;
                case "type":
                    changes.add(SchemaChange.updateColumnType(
                            names, DataTypeJsonParser.parseDataType(c.get("type")), true));
                    break;
                case "default":
                    changes.add(SchemaChange.updateColumnDefaultValue(names, text(c, "value")));
                    break;
                case "set-option":
                    changes.add(SchemaChange.setOption(text(c, "key"), text(c, "value")));
                    break;
                default:
                    throw new IllegalArgumentException("unknown schema change: " + kind);
            }
        }
        String branch = cmd.hasNonNull("branch") ? cmd.get("branch").asText() : "main";
        long id = new SchemaManager(LocalFileIO.create(), path, branch).commitChanges(changes).id();
        ObjectNode out = NODES.objectNode();
        out.put("schemaId", id);
        return out;
    }

    static JsonNode write(Path path, JsonNode cmd) throws Exception {
        FileStoreTable table = onBranch(table(path), cmd);
        RowType rowType = table.rowType();
        List<InternalRow> rows = rowsOf(cmd, rowType);
        boolean stream = cmd.hasNonNull("commitUser") || cmd.hasNonNull("commitIdentifier");
        IOManager ioManager = ioManager();
        try {
            if (stream) {
                String user = cmd.hasNonNull("commitUser") ? cmd.get("commitUser").asText() : UUID.randomUUID().toString();
                long identifier;
                if (cmd.hasNonNull("commitIdentifier")) {
                    identifier = cmd.get("commitIdentifier").asLong();
                } else {
                    Optional<Snapshot> last = table.snapshotManager().latestSnapshotOfUser(user);
                    identifier = last.map(s -> s.commitIdentifier() + 1).orElse(1L);
                }
                StreamWriteBuilder builder = table.newStreamWriteBuilder().withCommitUser(user);
                List<CommitMessage> messages;
                try (StreamTableWrite w = builder.newWrite()) {
                    w.withIOManager(ioManager);
                    for (InternalRow r : rows) {
                        w.write(r);
                    }
                    messages = w.prepareCommit(false, identifier);
                }
                pauseBeforeCommit(cmd);
                try (StreamTableCommit c = builder.newCommit()) {
                    c.commit(identifier, messages);
                }
            } else {
                BatchWriteBuilder builder = table.newBatchWriteBuilder();
                if (cmd.path("overwrite").asBoolean(false)) {
                    builder = builder.withOverwrite(stringMap(cmd.get("staticPartition")));
                }
                List<CommitMessage> messages;
                try (BatchTableWrite w = builder.newWrite()) {
                    w.withIOManager(ioManager);
                    for (InternalRow r : rows) {
                        w.write(r);
                    }
                    messages = w.prepareCommit();
                }
                pauseBeforeCommit(cmd);
                try (BatchTableCommit c = builder.newCommit()) {
                    c.commit(messages);
                }
            }
        } finally {
            ioManager.close();
        }
        return NODES.objectNode();
    }

    /**
     * Some columns of the rows of one file of a data-evolution table, as Java's Spark MERGE INTO
     * writes them (DataEvolutionTableDataWrite): a file of those columns alone, covering the
     * same row ids ({"firstRowId", "columns", "rows": one per row of that file, in order}).
     * Unpartitioned tables only.
     */
    static JsonNode writeColumns(Path path, JsonNode cmd) throws Exception {
        FileStoreTable table = table(path);
        RowType writeType = table.rowType().project(strings(cmd.get("columns")));
        long firstRowId = cmd.get("firstRowId").asLong();
        BatchWriteBuilder builder = table.newBatchWriteBuilder();
        IOManager ioManager = ioManager();
        List<CommitMessage> messages = new ArrayList<>();
        try (TableWriteImpl<?> w = (TableWriteImpl<?>) builder.newWrite()) {
            w.withIOManager(ioManager);
            w.withWriteType(writeType);
            @SuppressWarnings("unchecked")
            RecordWriter<InternalRow> writer =
                    ((AbstractFileStoreWrite<InternalRow>) w.getWrite()).createWriter(BinaryRow.EMPTY_ROW, 0);
            try {
                for (JsonNode row : cmd.get("rows")) {
                    writer.write(ValueCodec.rowFromJson(row, writeType));
                }
                List<DataFileMeta> files = writer.prepareCommit(false).newFilesIncrement().newFiles();
                messages.add(new CommitMessageImpl(BinaryRow.EMPTY_ROW, 0, null,
                        new DataIncrement(List.of(files.get(0).assignFirstRowId(firstRowId)),
                                Collections.emptyList(), Collections.emptyList()),
                        CompactIncrement.emptyIncrement()));
            } finally {
                writer.close();
            }
        } finally {
            ioManager.close();
        }
        try (BatchTableCommit c = builder.newCommit()) {
            c.commit(messages);
        }
        return NODES.objectNode();
    }

    static JsonNode read(Path path, JsonNode cmd) throws Exception {
        FileStoreTable table = onBranch(table(path), cmd);
        Map<String, String> dynamic = new HashMap<>();
        if (cmd.hasNonNull("snapshotId")) {
            dynamic.put("scan.snapshot-id", cmd.get("snapshotId").asText());
        }
        if (cmd.hasNonNull("tag")) {
            dynamic.put("scan.tag-name", cmd.get("tag").asText());
        }
        if (cmd.hasNonNull("incrementalBetween")) {
            // "start,end": what changed after snapshot start up to end (changelog files when
            // the table has a changelog producer)
            dynamic.put("incremental-between", cmd.get("incrementalBetween").asText());
        }
        if (cmd.hasNonNull("options")) {
            // any other read options (time travel, scan.mode, ...), as a read's dynamic options
            dynamic.putAll(stringMap(cmd.get("options")));
        }
        if (!dynamic.isEmpty()) {
            table = table.copy(dynamic);
        }
        // "systemTable": "row_tracking" reads the table's rows with their _ROW_ID and _SEQUENCE_NUMBER;
        // any other name, that system table of the table (Java's SystemTableLoader: "partitions", ...)
        String system = cmd.path("systemTable").asText(null);
        Table read = system == null ? table
                : "row_tracking".equals(system) ? new RowTrackingTable(table) : SystemTableLoader.load(system, table);
        ReadBuilder rb = read.newReadBuilder();
        RowType readType = read.rowType();
        if (cmd.hasNonNull("columns")) {
            List<String> names = strings(cmd.get("columns"));
            int[] projection = new int[names.size()];
            for (int i = 0; i < projection.length; i++) {
                projection[i] = read.rowType().getFieldIndex(names.get(i));
                if (projection[i] < 0) {
                    throw new IllegalArgumentException("no such column: " + names.get(i));
                }
            }
            rb = rb.withProjection(projection);
            readType = read.rowType().project(projection);
        }
        if (cmd.hasNonNull("where")) {
            // a predicate tree, pushed down as Java's readers push a WHERE clause (files skipped by
            // statistics and file indexes; rows of files read filtered by bitmap-based indexes only):
            // see whereOf
            rb = rb.withFilter(whereOf(new PredicateBuilder(table.rowType()), table.rowType(), cmd.get("where")));
        }
        boolean withKind = cmd.path("withRowKind").asBoolean(false);
        List<Split> splits;
        if (cmd.hasNonNull("streamPlans")) {
            // a stream's first "streamPlans" plans: where it starts, then each later snapshot's changes
            StreamTableScan streamScan = rb.newStreamScan();
            splits = new ArrayList<>();
            for (int i = 0; i < cmd.get("streamPlans").asInt(); i++) {
                splits.addAll(streamScan.plan().splits());
            }
        } else {
            splits = rb.newScan().plan().splits();
        }
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
        // the row type actually read (after time travel / projection), in schema-file form
        result.set("fields", MAPPER.valueToTree(readType.getFields()));
        result.set("rows", out);
        return result;
    }

    /**
     * A read's "where": {"and": [p, ...]}, {"or": [p, ...]}, {"not": p} (Java's negation; an
     * error when Java has none), or {"column": name, "op": op, ...} with op one of = != < <= > >=
     * ("value"), "in" / "not in" ("values": a list, nulls allowed), "is null", "is not null",
     * "startsWith" / "endsWith" / "contains" ("value"), "between" ("values": [low, high]).
     */
    static Predicate whereOf(PredicateBuilder builder, RowType rowType, JsonNode where) {
        if (where.has("and") || where.has("or")) {
            List<Predicate> parts = new ArrayList<>();
            for (JsonNode p : where.has("and") ? where.get("and") : where.get("or")) {
                parts.add(whereOf(builder, rowType, p));
            }
            return where.has("and") ? PredicateBuilder.and(parts) : PredicateBuilder.or(parts);
        }
        if (where.has("not")) {
            return whereOf(builder, rowType, where.get("not")).negate()
                    .orElseThrow(() -> new IllegalArgumentException("Java cannot negate " + where.get("not")));
        }
        String column = where.get("column").asText();
        int index = rowType.getFieldIndex(column);
        if (index < 0) {
            throw new IllegalArgumentException("no such column: " + column);
        }
        DataType type = rowType.getTypeAt(index);
        String op = where.get("op").asText();
        List<Object> values = new ArrayList<>();
        for (JsonNode v : where.path("values")) {
            values.add(ValueCodec.fromJson(v, type));
        }
        Object value = where.has("value") ? ValueCodec.fromJson(where.get("value"), type) : null;
        return switch (op) {
            case "=" -> builder.equal(index, value);
            case "!=" -> builder.notEqual(index, value);
            case "<" -> builder.lessThan(index, value);
            case "<=" -> builder.lessOrEqual(index, value);
            case ">" -> builder.greaterThan(index, value);
            case ">=" -> builder.greaterOrEqual(index, value);
            case "in" -> builder.in(index, values);
            case "not in" -> builder.notIn(index, values);
            case "is null" -> builder.isNull(index);
            case "is not null" -> builder.isNotNull(index);
            case "startsWith" -> builder.startsWith(index, value);
            case "endsWith" -> builder.endsWith(index, value);
            case "contains" -> builder.contains(index, value);
            case "between" -> builder.between(index, values.get(0), values.get(1));
            default -> throw new IllegalArgumentException("unknown comparison: " + op);
        };
    }

    static JsonNode snapshots(Path path) throws Exception {
        FileStoreTable table = table(path);
        List<Snapshot> list = new ArrayList<>(table.snapshotManager().safelyGetAllSnapshots());
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
            o.put("totalRecordCount", s.totalRecordCount());
            o.put("deltaRecordCount", s.deltaRecordCount());
            if (s.changelogRecordCount() != null) {
                o.put("changelogRecordCount", s.changelogRecordCount());
            }
            if (s.watermark() != null) {
                o.put("watermark", s.watermark());
            }
            arr.add(o);
        }
        ObjectNode result = NODES.objectNode();
        result.set("snapshots", arr);
        return result;
    }

    static JsonNode compact(Path path, JsonNode cmd) throws Exception {
        // "options": dynamic options, e.g. a dedicated compaction job's 'write-only' = false
        FileStoreTable table = withOptions(table(path), cmd);
        int compacted = 0;
        if (table.coreOptions().bucket() == -1 && table.primaryKeys().isEmpty()) {
            // Bucket-unaware append table: plan compaction tasks and run them. Such tables have
            // no "full" compaction; merging any partition with at least two small files is the
            // closest thing.
            if (!table.options().containsKey("compaction.min.file-num")) {
                table = table.copy(Map.of("compaction.min.file-num", "2"));
            }
            List<AppendCompactTask> tasks;
            try {
                tasks = new AppendCompactCoordinator(table, false).run();
            } catch (EndOfScanException e) {
                tasks = Collections.emptyList();
            }
            if (!tasks.isEmpty()) {
                String user = UUID.randomUUID().toString();
                List<CommitMessage> messages = new ArrayList<>();
                BaseAppendFileStoreWrite write = (BaseAppendFileStoreWrite) table.store().newWrite(user);
                if (table.coreOptions().rowTrackingEnabled()) {
                    // as Spark's CompactProcedure and Flink's compactor: the rewritten rows keep
                    // their row ids and sequence numbers in the files' own columns
                    write.withWriteType(SpecialFields.rowTypeWithRowTracking(table.rowType()));
                }
                try {
                    for (AppendCompactTask task : tasks) {
                        messages.add(task.doCompact(table, write));
                    }
                } finally {
                    write.close();
                }
                try (TableCommitImpl commit = table.newCommit(user)) {
                    commit.commit(messages);
                }
                compacted = tasks.size();
            }
        } else {
            Set<List<Object>> seen = new LinkedHashSet<>();
            List<BinaryRow> partitions = new ArrayList<>();
            List<Integer> bucketList = new ArrayList<>();
            // every level, as a dedicated compaction job scans (a DV table's batch scan skips level 0)
            for (Split split : table.newScan().withLevelFilter(level -> true).plan().splits()) {
                DataSplit ds = (DataSplit) split;
                if (seen.add(List.of(ds.partition(), ds.bucket()))) {
                    partitions.add(ds.partition());
                    bucketList.add(ds.bucket());
                }
            }
            if (!partitions.isEmpty()) {
                BatchWriteBuilder builder = table.newBatchWriteBuilder();
                IOManager ioManager = ioManager();
                List<CommitMessage> messages;
                try (BatchTableWrite w = builder.newWrite()) {
                    w.withIOManager(ioManager);
                    boolean full = cmd.path("full").asBoolean(true);
                    for (int i = 0; i < partitions.size(); i++) {
                        w.compact(partitions.get(i), bucketList.get(i), full);
                    }
                    messages = w.prepareCommit();
                } finally {
                    ioManager.close();
                }
                pauseBeforeCommit(cmd);
                try (BatchTableCommit c = builder.newCommit()) {
                    c.commit(messages);
                }
                compacted = partitions.size();
            }
        }
        ObjectNode result = NODES.objectNode();
        result.put("compacted", compacted);
        return result;
    }

    static JsonNode buckets(Path path, JsonNode cmd) throws Exception {
        FileStoreTable table = table(path);
        RowKeyExtractor extractor = table.createRowKeyExtractor();
        ArrayNode arr = NODES.arrayNode();
        for (JsonNode row : cmd.get("rows")) {
            extractor.setRecord(ValueCodec.rowFromJson(row, table.rowType()));
            arr.add(extractor.bucket());
        }
        ObjectNode result = NODES.objectNode();
        result.set("buckets", arr);
        return result;
    }

    static JsonNode createTag(Path path, JsonNode cmd) throws Exception {
        FileStoreTable table = table(path);
        String tag = text(cmd, "tag");
        if (cmd.hasNonNull("snapshotId")) {
            table.createTag(tag, cmd.get("snapshotId").asLong());
        } else {
            table.createTag(tag);
        }
        return NODES.objectNode();
    }

    static JsonNode createBranch(Path path, JsonNode cmd) throws Exception {
        FileStoreTable table = table(path);
        String branch = text(cmd, "branch");
        if (cmd.hasNonNull("tag")) {
            table.createBranch(branch, cmd.get("tag").asText());
        } else {
            table.createBranch(branch);
        }
        return NODES.objectNode();
    }

    // ------------------------------------------------------------------ lifecycle

    /** The table with dynamic options {"options": {...}} over its own. */
    static FileStoreTable withOptions(FileStoreTable table, JsonNode cmd) {
        JsonNode options = cmd.get("options");
        return options == null || options.isNull() || options.size() == 0
                ? table : table.copy(stringMap(options));
    }

    /** Snapshot expiration, then changelog expiration when decoupled, as after Java's commit. */
    static JsonNode expire(Path path, JsonNode cmd) throws Exception {
        FileStoreTable table = withOptions(table(path), cmd);
        org.apache.paimon.options.ExpireConfig config = table.coreOptions().expireConfig();
        int expired = table.newExpireSnapshots().config(config).expire();
        if (table.coreOptions().changelogLifecycleDecoupled()) {
            table.newExpireChangelog().config(config).expire();
        }
        ObjectNode result = NODES.objectNode();
        result.put("expired", expired);
        return result;
    }

    static JsonNode rollbackTo(Path path, JsonNode cmd) throws Exception {
        FileStoreTable table = table(path);
        if (cmd.hasNonNull("tag")) {
            table.rollbackTo(cmd.get("tag").asText());
        } else {
            table.rollbackTo(cmd.get("snapshotId").asLong());
        }
        return NODES.objectNode();
    }

    static JsonNode removeOrphanFiles(Path path, JsonNode cmd) throws Exception {
        long olderThan = cmd.hasNonNull("olderThanMillis")
                ? cmd.get("olderThanMillis").asLong() : System.currentTimeMillis() - 86_400_000L;
        org.apache.paimon.operation.CleanOrphanFilesResult r =
                new org.apache.paimon.operation.LocalOrphanFilesClean(table(path), olderThan, false).clean();
        ArrayNode deleted = NODES.arrayNode();
        if (r.getDeletedFilesPath() != null) {
            for (Path p : r.getDeletedFilesPath()) {
                deleted.add(p.toString());
            }
        }
        ObjectNode result = NODES.objectNode();
        result.set("deleted", deleted);
        return result;
    }

    static JsonNode expirePartitions(Path path, JsonNode cmd) throws Exception {
        Map<String, String> dynamic = new HashMap<>();
        dynamic.put("partition.expiration-time", text(cmd, "expirationTime"));
        dynamic.put("partition.expiration-check-interval", "0 s");
        FileStoreTable table = table(path).copy(dynamic);
        List<Map<String, String>> expired =
                table.store().newPartitionExpire(UUID.randomUUID().toString(), table).expire(Long.MAX_VALUE);
        ObjectNode result = NODES.objectNode();
        result.set("expired", MAPPER.valueToTree(expired == null ? List.of() : expired));
        return result;
    }

    static JsonNode tags(Path path) throws Exception {
        ObjectNode tags = NODES.objectNode();
        for (Map.Entry<Snapshot, List<String>> e : table(path).tagManager().tags().entrySet()) {
            for (String name : e.getValue()) {
                tags.put(name, e.getKey().id());
            }
        }
        ObjectNode result = NODES.objectNode();
        result.set("tags", tags);
        return result;
    }

    static JsonNode recordConsumer(Path path, JsonNode cmd) throws Exception {
        org.apache.paimon.consumer.ConsumerManager consumers = table(path).consumerManager();
        if (cmd.hasNonNull("nextSnapshot")) {
            consumers.resetConsumer(text(cmd, "consumerId"),
                    new org.apache.paimon.consumer.Consumer(cmd.get("nextSnapshot").asLong()));
        } else {
            consumers.deleteConsumer(text(cmd, "consumerId"));
        }
        return NODES.objectNode();
    }

    // ------------------------------------------------------------------ helpers

    /**
     * {"pauseBeforeCommit": {"ready": file, "go": file}} on write and compact: once the files are
     * written and the commit messages made, create `ready` and wait (up to 5 minutes) for `go`
     * to exist before committing, so a test can commit between Java's write and its commit.
     */
    static void pauseBeforeCommit(JsonNode cmd) throws Exception {
        JsonNode pause = cmd.get("pauseBeforeCommit");
        if (pause == null || pause.isNull()) {
            return;
        }
        java.nio.file.Files.createFile(java.nio.file.Paths.get(text(pause, "ready")));
        java.nio.file.Path go = java.nio.file.Paths.get(text(pause, "go"));
        long deadline = System.currentTimeMillis() + 300_000;
        while (!java.nio.file.Files.exists(go)) {
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("no go file " + go + " within 5 minutes");
            }
            Thread.sleep(20);
        }
    }

    /** The command's "rows", each with its "_ROW_KIND" when given. */
    static List<InternalRow> rowsOf(JsonNode cmd, RowType rowType) {
        List<InternalRow> rows = new ArrayList<>();
        for (JsonNode row : cmd.get("rows")) {
            InternalRow r = ValueCodec.rowFromJson(row, rowType);
            JsonNode kind = row.get(ROW_KIND);
            if (kind != null && !kind.isNull()) {
                r.setRowKind(RowKind.fromShortString(kind.asText()));
            }
            rows.add(r);
        }
        return rows;
    }

    /** The table, or its branch when the command names one ({"branch": name}). */
    static FileStoreTable onBranch(FileStoreTable table, JsonNode cmd) {
        return cmd.hasNonNull("branch") ? table.switchToBranch(cmd.get("branch").asText()) : table;
    }

    static FileStoreTable table(Path path) {
        return FileStoreTableFactory.create(LocalFileIO.create(), path);
    }

    static IOManager ioManager() {
        return IOManager.create(System.getProperty("java.io.tmpdir"));
    }
}
