package org.paimonstreaming.oracle;

import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.Decimal;
import org.apache.paimon.data.GenericArray;
import org.apache.paimon.data.GenericMap;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.InternalArray;
import org.apache.paimon.data.InternalMap;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.types.ArrayType;
import org.apache.paimon.types.DataField;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DecimalType;
import org.apache.paimon.types.MapType;
import org.apache.paimon.types.MultisetType;
import org.apache.paimon.types.RowType;

import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.JsonNodeFactory;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;

import java.math.BigDecimal;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The one place that defines the JSON value encoding shared with tests/java_oracle.py.
 *
 * <ul>
 *   <li>TINYINT, SMALLINT, INT, BIGINT: JSON number
 *   <li>FLOAT, DOUBLE: JSON number, or the strings "NaN", "Infinity", "-Infinity"
 *   <li>BOOLEAN: JSON bool
 *   <li>CHAR, VARCHAR, STRING: JSON string
 *   <li>BINARY, VARBINARY, BYTES: base64 string
 *   <li>DECIMAL: plain decimal string, e.g. "-1.23"
 *   <li>DATE: days since 1970-01-01 (int)
 *   <li>TIME: milliseconds of the day (int)
 *   <li>TIMESTAMP(p), TIMESTAMP(p) WITH LOCAL TIME ZONE: {"millis": epoch millis, "nanos":
 *       nano-of-millisecond 0..999999} (UTC epoch; for LTZ it is the instant)
 *   <li>ARRAY: JSON array
 *   <li>MAP: JSON array of [key, value] pairs; MULTISET: JSON array of [element, count] pairs
 *   <li>ROW: JSON object by field name
 *   <li>VARIANT (Paimon 1.1+): see tests/java's VariantCodec, the {@link Extension} its oracle
 *       installs
 *   <li>null: null
 * </ul>
 *
 * <p>Shared by the oracle of Paimon 1.4.2 (tests/java) and that of older releases
 * (tests/java_legacy), so it names only types every release from 0.8 on has; newer ones go
 * through {@link #extension}.
 */
final class ValueCodec {

    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

    /** Types this class does not name (a newer release's). */
    interface Extension {
        Object fromJson(JsonNode v, DataType type);

        JsonNode toJson(Object value, DataType type);
    }

    /** Installed by an oracle whose Paimon has more types (tests/java: VARIANT). */
    static Extension extension;

    private ValueCodec() {}

    // ------------------------------------------------------------------ JSON -> Paimon

    static GenericRow rowFromJson(JsonNode node, RowType type) {
        List<DataField> fields = type.getFields();
        GenericRow row = new GenericRow(fields.size());
        for (int i = 0; i < fields.size(); i++) {
            DataField f = fields.get(i);
            row.setField(i, fromJson(node.get(f.name()), f.type()));
        }
        return row;
    }

    static Object fromJson(JsonNode v, DataType type) {
        if (v == null || v.isNull()) {
            return null;
        }
        switch (type.getTypeRoot()) {
            case BOOLEAN:
                return v.asBoolean();
            case TINYINT:
                return (byte) v.asLong();
            case SMALLINT:
                return (short) v.asLong();
            case INTEGER:
            case DATE:
            case TIME_WITHOUT_TIME_ZONE:
                return v.intValue();
            case BIGINT:
                return v.longValue();
            case FLOAT:
                return (float) doubleFromJson(v);
            case DOUBLE:
                return doubleFromJson(v);
            case CHAR:
            case VARCHAR:
                return BinaryString.fromString(v.asText());
            case BINARY:
            case VARBINARY:
                return Base64.getDecoder().decode(v.asText());
            case DECIMAL:
                {
                    DecimalType dt = (DecimalType) type;
                    BigDecimal bd = new BigDecimal(v.asText());
                    Decimal d = Decimal.fromBigDecimal(bd, dt.getPrecision(), dt.getScale());
                    if (d == null) {
                        throw new IllegalArgumentException(
                                "decimal " + v.asText() + " does not fit " + type);
                    }
                    return d;
                }
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                return Timestamp.fromEpochMillis(
                        v.get("millis").longValue(), v.path("nanos").intValue());
            case ARRAY:
                {
                    DataType elementType = ((ArrayType) type).getElementType();
                    Object[] values = new Object[v.size()];
                    for (int i = 0; i < values.length; i++) {
                        values[i] = fromJson(v.get(i), elementType);
                    }
                    return new GenericArray(values);
                }
            case MAP:
                {
                    MapType mt = (MapType) type;
                    return pairsToMap(v, mt.getKeyType(), mt.getValueType());
                }
            case MULTISET:
                {
                    MultisetType mt = (MultisetType) type;
                    return pairsToMap(
                            v, mt.getElementType(), new org.apache.paimon.types.IntType(false));
                }
            case ROW:
                return rowFromJson(v, (RowType) type);
            default:
                if (extension != null) {
                    return extension.fromJson(v, type);
                }
                throw new UnsupportedOperationException("unsupported type: " + type);
        }
    }

    private static GenericMap pairsToMap(JsonNode v, DataType keyType, DataType valueType) {
        Map<Object, Object> map = new LinkedHashMap<>();
        for (JsonNode pair : v) {
            map.put(fromJson(pair.get(0), keyType), fromJson(pair.get(1), valueType));
        }
        return new GenericMap(map);
    }

    private static double doubleFromJson(JsonNode v) {
        if (v.isTextual()) {
            switch (v.asText()) {
                case "NaN":
                    return Double.NaN;
                case "Infinity":
                    return Double.POSITIVE_INFINITY;
                case "-Infinity":
                    return Double.NEGATIVE_INFINITY;
                default:
                    return Double.parseDouble(v.asText());
            }
        }
        return v.doubleValue();
    }

    // ------------------------------------------------------------------ Paimon -> JSON

    static ObjectNode rowToJson(InternalRow row, RowType type) {
        ObjectNode o = NODES.objectNode();
        List<DataField> fields = type.getFields();
        for (int i = 0; i < fields.size(); i++) {
            DataField f = fields.get(i);
            Object value = InternalRow.createFieldGetter(f.type(), i).getFieldOrNull(row);
            o.set(f.name(), toJson(value, f.type()));
        }
        return o;
    }

    static JsonNode toJson(Object value, DataType type) {
        if (value == null) {
            return NODES.nullNode();
        }
        switch (type.getTypeRoot()) {
            case BOOLEAN:
                return NODES.booleanNode((Boolean) value);
            case TINYINT:
            case SMALLINT:
            case INTEGER:
            case BIGINT:
            case DATE:
            case TIME_WITHOUT_TIME_ZONE:
                return NODES.numberNode(((Number) value).longValue());
            case FLOAT:
            case DOUBLE:
                {
                    double d = ((Number) value).doubleValue();
                    if (Double.isNaN(d)) {
                        return NODES.textNode("NaN");
                    } else if (Double.isInfinite(d)) {
                        return NODES.textNode(d > 0 ? "Infinity" : "-Infinity");
                    }
                    return NODES.numberNode(d);
                }
            case CHAR:
            case VARCHAR:
                return NODES.textNode(value.toString());
            case BINARY:
            case VARBINARY:
                return NODES.textNode(Base64.getEncoder().encodeToString((byte[]) value));
            case DECIMAL:
                return NODES.textNode(((Decimal) value).toBigDecimal().toPlainString());
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                {
                    Timestamp ts = (Timestamp) value;
                    ObjectNode o = NODES.objectNode();
                    o.put("millis", ts.getMillisecond());
                    o.put("nanos", ts.getNanoOfMillisecond());
                    return o;
                }
            case ARRAY:
                {
                    DataType elementType = ((ArrayType) type).getElementType();
                    return arrayToJson((InternalArray) value, elementType);
                }
            case MAP:
                {
                    MapType mt = (MapType) type;
                    return mapToJson((InternalMap) value, mt.getKeyType(), mt.getValueType());
                }
            case MULTISET:
                {
                    MultisetType mt = (MultisetType) type;
                    return mapToJson(
                            (InternalMap) value,
                            mt.getElementType(),
                            new org.apache.paimon.types.IntType(false));
                }
            case ROW:
                return rowToJson((InternalRow) value, (RowType) type);
            default:
                if (extension != null) {
                    return extension.toJson(value, type);
                }
                throw new UnsupportedOperationException("unsupported type: " + type);
        }
    }

    private static ArrayNode arrayToJson(InternalArray array, DataType elementType) {
        InternalArray.ElementGetter getter = InternalArray.createElementGetter(elementType);
        ArrayNode out = NODES.arrayNode();
        for (int i = 0; i < array.size(); i++) {
            out.add(toJson(getter.getElementOrNull(array, i), elementType));
        }
        return out;
    }

    private static ArrayNode mapToJson(InternalMap map, DataType keyType, DataType valueType) {
        InternalArray keys = map.keyArray();
        InternalArray values = map.valueArray();
        InternalArray.ElementGetter kg = InternalArray.createElementGetter(keyType);
        InternalArray.ElementGetter vg = InternalArray.createElementGetter(valueType);
        ArrayNode out = NODES.arrayNode();
        for (int i = 0; i < map.size(); i++) {
            ArrayNode pair = NODES.arrayNode();
            pair.add(toJson(kg.getElementOrNull(keys, i), keyType));
            pair.add(toJson(vg.getElementOrNull(values, i), valueType));
            out.add(pair);
        }
        return out;
    }
}
